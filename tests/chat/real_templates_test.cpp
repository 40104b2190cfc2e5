// Real chat templates beyond the shared goldens (Qwen2.5 and Mistral v0.3 with tool
// calls, Llama-2 chat, a DeepSeek-R1-style namespace template, a macro-based template),
// rendered with add_generation_prompt; expected strings from Python Jinja2 3.1.6 set up as
// transformers sets it up (tools passed as apply_chat_template passes them).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llmport/chat_template.hpp"

namespace {

struct RealCase {
  const char* name;
  const char* tmpl;
  const char* messages;
  const char* vars;
  const char* expected;
};

// clang-format off
const RealCase kReal[] = {
    {"qwen2.5_tools",
     R"J({%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
)J",
     R"J([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "abcdefghi", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "°C"}}}]}, {"role": "tool", "tool_call_id": "abcdefghi", "content": "{\"temp\": 21}"}, {"role": "assistant", "content": "It is 21."}, {"role": "user", "content": "Thanks"}])J",
     R"J({"tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}}], "bos_token": "<s>", "eos_token": "</s>"})J",
     R"J(<|im_start|>system
Be brief.

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
<|im_start|>user
Weather in Paris?<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "°C"}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
{"temp": 21}
</tool_response><|im_end|>
<|im_start|>assistant
It is 21.<|im_end|>
<|im_start|>user
Thanks<|im_end|>
<|im_start|>assistant
)J"},
    {"mistral_v0.3_tools",
     R"J({%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}
                        {{- ", " }}
                    {%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- else %}
                    {{- "]" }}
                {%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
            {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
)J",
     R"J([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "abcdefghi", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "°C"}}}]}, {"role": "tool", "tool_call_id": "abcdefghi", "content": "{\"temp\": 21}"}, {"role": "assistant", "content": "It is 21."}, {"role": "user", "content": "Thanks"}])J",
     R"J({"tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}}], "bos_token": "<s>", "eos_token": "</s>"})J",
     R"J(<s>[INST] Weather in Paris?[/INST][TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "°C"}, "id": "abcdefghi"}]</s>[TOOL_RESULTS] {"content": {"temp": 21}, "call_id": "abcdefghi"}[/TOOL_RESULTS] It is 21.</s>[AVAILABLE_TOOLS] [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}}][/AVAILABLE_TOOLS][INST] Be brief.

Thanks[/INST])J"},
    {"llama2_chat",
     R"J({% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %})J",
     R"J([{"role": "system", "content": "Be brief."}, {"role": "user", "content": " Hi "}, {"role": "assistant", "content": " Hello "}, {"role": "user", "content": "Bye"}])J",
     R"J({"bos_token": "<s>", "eos_token": "</s>"})J",
     R"J(<s>[INST] <<SYS>>
Be brief.
<</SYS>>

 Hi [/INST] Hello </s><s>[INST] Bye [/INST])J"},
    {"deepseek_r1_like",
     R"J({% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='', is_first_sp=true) %}{%- for message in messages %}{%- if message['role'] == 'system' %}{%- if ns.is_first_sp %}{% set ns.system_prompt = ns.system_prompt + message['content'] %}{% set ns.is_first_sp = false %}{%- else %}{% set ns.system_prompt = ns.system_prompt + '\n\n' + message['content'] %}{%- endif %}{%- endif %}{%- endfor %}{{ bos_token }}{{ ns.system_prompt }}{%- for message in messages %}{%- if message['role'] == 'user' %}{{'<｜User｜>' + message['content']}}{%- endif %}{%- if message['role'] == 'assistant' and message['content'] is not none %}{% set content = message['content'] %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endfor %}{% if add_generation_prompt %}{{'<｜Assistant｜><think>\n'}}{% endif %})J",
     R"J([{"role": "user", "content": "q"}, {"role": "assistant", "content": "<think>x</think>ans"}, {"role": "user", "content": "q2"}])J",
     R"J({"bos_token": "<s>", "eos_token": "</s>"})J",
     R"J(<s><｜User｜>q<｜Assistant｜>ans<｜end▁of▁sentence｜><｜User｜>q2<｜Assistant｜><think>
)J"},
    {"gemma_macro_style",
     R"J({% macro fmt(m) -%}
<start_of_turn>{{ 'model' if m.role == 'assistant' else m.role }}
{{ m.content | trim }}<end_of_turn>
{%- endmacro %}
{{ bos_token }}
{%- for m in messages %}
  {{ fmt(m) }}
{% endfor %}
{%- if add_generation_prompt %}<start_of_turn>model
{% endif %}
)J",
     R"J([{"role": "user", "content": " a "}, {"role": "assistant", "content": "b"}])J",
     R"J({"bos_token": "<s>", "eos_token": "</s>"})J",
     R"J(<s>  <start_of_turn>user
a<end_of_turn>
  <start_of_turn>model
b<end_of_turn>
<start_of_turn>model
)J"},
};
// clang-format on

}  // namespace

TEST(RealTemplates, MatchPythonJinja2) {
  for (const auto& c : kReal) {
    SCOPED_TRACE(c.name);
    std::string got;
    ASSERT_NO_THROW(got = llmport::render_chat_template(c.tmpl, nlohmann::ordered_json::parse(c.messages), true,
                                                        nlohmann::ordered_json::parse(c.vars)));
    EXPECT_EQ(got, std::string(c.expected));
  }
}
