# Shared by the install tests: fail() and the golden's expected text, from the environment
# the CTest definitions give (tests/install/CMakeLists.txt).
fail() { echo "FAIL: $*" >&2; exit 1; }
# $LLMPORT_SHARED, else ../shared beside the checkout (as tests/support does).
LLMPORT_SHARED="${LLMPORT_SHARED:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/shared}"
[ -d "$LLMPORT_SHARED" ] || fail "shared data $LLMPORT_SHARED missing (set LLMPORT_SHARED)"
STORIES="$LLMPORT_SHARED/models/stories260K"
GOLDEN="$STORIES/golden/public.json"
[ -f "$GOLDEN" ] || fail "$GOLDEN missing (shared data)"
# The golden's first case: prompt and full_text (tokenizer.json decode of prompt + the
# reference's 32 greedy tokens, produced outside llmport).
golden_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cases"][0][sys.argv[2]])' "$GOLDEN" "$1"; }
GOLDEN_PROMPT="$(golden_field prompt)"
GOLDEN_TEXT="$(golden_field full_text)"
[ "$GOLDEN_PROMPT" = "Once upon a time" ] || fail "unexpected golden prompt '$GOLDEN_PROMPT'"
