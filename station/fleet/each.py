"""One command on every host of a fleet at once (an inventory group, or hosts and groups separated by commas): each
host under its own lock and with its own output, shown as it ends; one host failing stops nothing on the others,
and the command fails naming each host that failed."""

from __future__ import annotations

import io
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import nullcontext

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.text import Text

from station.deploy import actions
from station.errors import StationError

# What a command does on one host, printing to the console it is given
Work = Callable[[str, Console], None]


def run(hosts: list[str], command: str, work: Work, console: Console, locked: bool = True) -> None:
    """`work` on every host at once, each under the host's lock where `locked`; raises naming the hosts that failed."""
    failed: dict[str, StationError] = {}
    running = list(hosts)
    with console.status(_running(command, running)) as status, ThreadPoolExecutor(len(hosts)) as pool:
        futures = {pool.submit(_on_one, host, command, work, console, locked): host for host in hosts}
        for future in as_completed(futures):
            host = futures[future]
            output, error = future.result()
            console.print(Rule(f"{command} on {host}", style="red" if error else "green"))
            if output:
                console.print(Text.from_ansi(output))
            if error:
                failed[host] = error
            running.remove(host)
            status.update(_running(command, running))
    if failed:
        raise failures(command, {host: failed[host] for host in hosts if host in failed})  # in the order named


def failures(command: str, failed: dict[str, StationError]) -> StationError:
    """One error for a fleet command, naming every host that failed and why."""
    return StationError(
        f"{command} failed on {', '.join(failed)}:\n" + "\n".join(error.problem for error in failed.values()),
        "; ".join(error.hint for error in failed.values() if error.hint),
    )


def _on_one(host: str, command: str, work: Work, parent: Console, locked: bool) -> tuple[str, StationError | None]:
    """What `work` printed on `host`, and the error it failed with, if any."""
    out = Console(
        file=io.StringIO(), width=parent.width, color_system=parent.color_system, force_terminal=False, highlight=False
    )
    try:
        with actions.holding(host, command, out) if locked else nullcontext():
            work(host, out)
        error = None
    except StationError as failure:
        out.print(f"[red]error:[/] {escape(failure.problem)}")
        if failure.hint:
            out.print(f"  → {escape(failure.hint)}")
        error = failure
    assert isinstance(out.file, io.StringIO)
    return out.file.getvalue(), error


def _running(command: str, hosts: list[str]) -> str:
    return f"{command} on {', '.join(hosts)}"
