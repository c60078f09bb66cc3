"""Check `vllm serve` argument lists with the installed vLLM's own argument parser.

Runs inside an engine image, so the parser is exactly the pinned vLLM's:

    python3 -c "$(cat check_vllm_args.py)" '[{"label": "step 3", "argv": ["--model", "m", ...]}]'

Prints one JSON object per line: {"label", "ok", "flag", "error", "suggestion"}.
Exits 0 when every list parses, 3 when one does not.
"""

import contextlib
import difflib
import importlib
import io
import json
import re
import sys

# Where make_arg_parser lives differs between vLLM releases.
PARSER_MODULES = ("vllm.entrypoints.launchers.cli_args", "vllm.entrypoints.openai.cli_args")


def serve_parser():
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    for name in PARSER_MODULES:
        with contextlib.suppress(ImportError):
            return importlib.import_module(name).make_arg_parser(FlexibleArgumentParser())
    raise SystemExit(f"no vLLM serve parser in {PARSER_MODULES}")


def known_options(parser):
    return sorted({option for action in parser._actions for option in action.option_strings})


def unknown_flag(parser, label, argv):
    """argparse accepts unambiguous abbreviations; a recipe must spell every flag out."""
    known = known_options(parser)
    for token in argv:
        flag = token.split("=", 1)[0]
        if flag.startswith("--") and flag not in known:
            near = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
            error = f"unrecognized argument {flag}"
            return {"label": label, "ok": False, "flag": flag, "error": error, "suggestion": near[0] if near else None}
    return None


def check(parser, label, argv):
    misspelt = unknown_flag(parser, label, argv)
    if misspelt:
        return misspelt
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            parser.parse_args(argv)
    except SystemExit:
        return diagnose(parser, label, errors.getvalue())
    except Exception as error:  # a type function of the parser raised: report it, do not crash
        return diagnose(parser, label, str(error))
    return {"label": label, "ok": True}


def diagnose(parser, label, output):
    message = (output.strip().splitlines() or ["the parser rejected the arguments"])[-1]
    message = message.split("error: ", 1)[-1]
    known = known_options(parser)
    unknown = re.search(r"unrecognized arguments: (\S+)", message)
    named = re.search(r"argument ([^:]+):", message)
    if unknown:
        flag = unknown.group(1).split("=", 1)[0]
        near = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
        suggestion = near[0] if near else None
    else:
        flag = named.group(1).split("/")[-1] if named else None
        suggestion = None
    return {"label": label, "ok": False, "flag": flag, "error": message, "suggestion": suggestion}


def main():
    parser = serve_parser()
    results = [check(parser, item["label"], item["argv"]) for item in json.loads(sys.argv[1])]
    for result in results:
        print(json.dumps(result))
    sys.exit(0 if all(result["ok"] for result in results) else 3)


if __name__ == "__main__":
    main()
