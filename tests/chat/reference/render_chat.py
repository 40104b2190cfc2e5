"""render_chat.py TEMPLATE_FILE CASES_JSONL: renders each case ({messages,
add_generation_prompt, vars}) with Jinja2 set up as Hugging Face transformers renders chat
templates (transformers/utils/chat_template_utils.py, _compile_jinja_template and
render_jinja_template: an ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and
loopcontrols; tojson with ensure_ascii=False; raise_exception; strftime_now; tools and
documents passed as None). Prints one JSON object per line: {"rendered": TEXT}, or
{"error": MESSAGE} where the template raises."""
import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


def main():
    template_file, cases_file = sys.argv[1:3]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    with open(template_file, encoding="utf-8") as f:
        template = env.from_string(f.read())
    out = []
    with open(cases_file, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            c = json.loads(line)
            try:
                text = template.render(messages=c["messages"], tools=None, documents=None,
                                       add_generation_prompt=c["add_generation_prompt"], **c["vars"])
                out.append(json.dumps({"rendered": text}, ensure_ascii=True))
            except Exception as e:  # the template's own raise, or a render-time error
                out.append(json.dumps({"error": f"{type(e).__name__}: {e}"}, ensure_ascii=True))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
