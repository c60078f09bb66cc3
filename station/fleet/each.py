"""One command on every host of a fleet at once (an inventory group, or hosts and groups separated by commas): each
host under its own lock and with its own output, shown as it ends, while one spinner says what each host is doing;
one host failing stops nothing on the others, and the command fails naming each host that failed."""

from __future__ import annotations

import io
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import nullcontext
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.text import Text

from station.deploy import actions, playbook
from station.errors import StationError

# What a command does on one host, printing to the console it is given
Work = Callable[[str, Console], None]


def run(hosts: list[str], command: str, work: Work, console: Console, locked: bool = True) -> None:
    """`work` on every host at once, each under the host's lock where `locked`; raises naming the hosts that failed."""
    board = dict.fromkeys(hosts, "starting")  # what each host still running is doing
    failed: dict[str, StationError] = {}
    with console.status(_said(command, board)) as status, ThreadPoolExecutor(len(hosts)) as pool:
        pending: dict[Future[StationError | None], _HostConsole] = {}
        for host in hosts:
            out = _HostConsole(host, board, console)
            pending[pool.submit(_on_one, host, command, work, out, locked)] = out
        interrupted = False
        while pending:
            try:
                done, _ = wait(pending, timeout=1, return_when=FIRST_COMPLETED)
            except KeyboardInterrupt:
                playbook.interrupt_all()  # each host's playbook stops where it is, and the host frees its lock
                interrupted = True
                continue
            for future in done:
                out = pending.pop(future)
                error = future.result()
                del board[out.host]
                _show(console, command, out, error)
                if error:
                    failed[out.host] = error
            status.update(_said(f"{command}, interrupted" if interrupted else command, board))
    if interrupted:
        raise KeyboardInterrupt
    if failed:
        raise failures(command, {host: failed[host] for host in hosts if host in failed})  # in the order named


def _show(console: Console, command: str, out: _HostConsole, error: StationError | None) -> None:
    """What a host printed, under a rule naming it, once it has ended."""
    console.print(Rule(f"{command} on {out.host}", style="red" if error else "green"))
    if out.output:
        console.print(Text.from_ansi(out.output))


def failures(command: str, failed: dict[str, StationError]) -> StationError:
    """One error for a fleet command, naming every host that failed and why."""
    return StationError(
        f"{command} failed on {', '.join(failed)}:\n" + "\n".join(error.problem for error in failed.values()),
        "; ".join(error.hint for error in failed.values() if error.hint),
    )


def _on_one(host: str, command: str, work: Work, out: _HostConsole, locked: bool) -> StationError | None:
    """`work` on `host`, printing to its own console; the error it failed with, if any."""
    try:
        with actions.holding(host, command, out) if locked else nullcontext():
            work(host, out)
    except StationError as error:
        out.print(f"[red]error:[/] {escape(error.problem)}")
        if error.hint:
            out.print(f"  → {escape(error.hint)}")
        return error
    return None


def _said(command: str, board: dict[str, str]) -> str:
    return f"{command}\n" + "\n".join(f"  {host}: {doing}" for host, doing in board.items())


class _HostConsole(Console):
    """One host's console: what the command prints there is kept to show when it ends, and what its spinner would
    say goes on the board the fleet's one spinner shows."""

    def __init__(self, host: str, board: dict[str, str], parent: Console) -> None:
        super().__init__(file=io.StringIO(), width=parent.width, color_system=parent.color_system, force_terminal=False)
        self.host, self._board = host, board

    @property
    def output(self) -> str:
        assert isinstance(self.file, io.StringIO)
        return self.file.getvalue()

    def status(self, status: Any, **_: Any) -> _OnTheBoard:  # type: ignore[override]
        return _OnTheBoard(self.host, self._board, status)


class _OnTheBoard:
    """Stands in for rich's Status on a host's console: each update is what the host is doing now."""

    def __init__(self, host: str, board: dict[str, str], status: Any) -> None:
        self.host, self.board = host, board
        self.update(status)

    def update(self, status: Any, **_: Any) -> None:
        self.board[self.host] = str(status)

    def __enter__(self) -> _OnTheBoard:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
