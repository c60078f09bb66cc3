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

# The parsers a recipe names, and the registries that list the ones this vLLM has.
PARSER_REGISTRIES = (
    ("--tool-call-parser", "vllm.tool_parsers", "ToolParserManager"),
    ("--reasoning-parser", "vllm.reasoning", "ReasoningParserManager"),
)
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
            args = parser.parse_args(argv)
    except SystemExit:
        return diagnose(parser, label, errors.getvalue())
    except Exception as error:  # a type function of the parser raised: report it, do not crash
        return diagnose(parser, label, str(error))
    return unknown_parser(label, args) or scheduler_problem(label, args) or {"label": label, "ok": True}


def registered(module, manager):
    with contextlib.suppress(ImportError, AttributeError):
        return set(getattr(importlib.import_module(module), manager).list_registered())
    return None  # a vLLM without this registry: nothing to check against


def unknown_parser(label, args):
    """Parser names are free text to argparse; the engine would reject an unknown one only at start."""
    for flag, module, manager in PARSER_REGISTRIES:
        attribute = flag.removeprefix("--").replace("-", "_")
        name = getattr(args, attribute, None)
        known = registered(module, manager) if name else None
        if known is not None and name not in known and not getattr(args, f"{attribute}_plugin", None):
            near = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
            error = f"{name!r} is not one of this vLLM's {flag[2:]}s ({', '.join(sorted(known))})"
            return {"label": label, "ok": False, "flag": flag, "error": error, "suggestion": near[0] if near else None}
    return None


def scheduler_problem(label, args):
    """The scheduler's own validation of the values the recipe sets (max-num-seqs above max-num-batched-tokens
    parses, but the engine would refuse it at start); the model's context length is unknown here, so it is only
    checked where the recipe sets it."""
    try:
        from vllm.config import SchedulerConfig
    except ImportError:
        return None  # a vLLM without it: the engine's start says the rest
    given = {
        name: getattr(args, name)
        for name in ("max_num_seqs", "max_num_batched_tokens", "enable_chunked_prefill")
        if getattr(args, name, None) is not None
    }
    if not given:
        return None
    try:
        SchedulerConfig(**given, max_model_len=args.max_model_len or 1, is_encoder_decoder=False)
    except Exception as error:  # pydantic's ValidationError, or ValueError in other releases
        lines = [line.strip() for line in str(error).splitlines()]
        reason = next((line for line in lines if line.startswith("Value error, ")), lines[-1])
        reason = reason.removeprefix("Value error, ").split(" [type=")[0]
        flag = next((f"--{name.replace('_', '-')}" for name in given if name in reason), None)
        return {"label": label, "ok": False, "flag": flag, "error": reason, "suggestion": None}
    return None


def error_text(output):
    """argparse's error line and what follows it (pydantic's reasons), without the usage or pydantic's link."""
    lines = output.strip().splitlines() or ["the parser rejected the arguments"]
    start = next((i for i, line in enumerate(lines) if "error: " in line), len(lines) - 1)
    kept = [line.strip() for line in lines[start:] if not line.strip().startswith("For further information")]
    return " ".join(kept).split("error: ", 1)[-1]


def diagnose(parser, label, output):
    message = error_text(output)
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
