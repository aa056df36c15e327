"""The book's kernel clients (companion.grid._Client): ready at the status that ends their own
kernel_info request, and never done with a cell before its output has come (grid.CLIENT_OPTIONS).
A kernel start that fails (companion.grid.start_kernel, under every SharedKernel): jupyter_client
picks free ports and the kernel binds them a moment later; another process that takes one in
between kills the kernel ("Address already in use"). The start is tried again on new ports."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import nbformat
import pytest
from bookutils import BOOK, kernels_running
from nbformat.v4 import new_code_cell, new_notebook

from companion import grid

sys.path.insert(0, str(BOOK / "_ext"))
import run_notebook  # the build's runner (book/_ext)

pytestmark = pytest.mark.book  # starts kernels


def take_shell_ports(monkeypatch, times: int) -> list[tuple[socket.socket, Path]]:
    """The first ``times`` kernels find their shell port taken (a socket listens on it from the
    moment their connection file is written); returns each taker and that connection file."""
    taken = []
    write = grid._Manager.write_connection_file

    def write_and_take(self, **kwargs):
        write(self, **kwargs)
        if len(taken) < times:
            sock = socket.socket()
            sock.bind((self.ip, self.shell_port))
            sock.listen()
            taken.append((sock, Path(self.connection_file)))

    monkeypatch.setattr(grid._Manager, "write_connection_file", write_and_take)
    return taken


def test_a_kernel_that_loses_its_port_starts_again_on_new_ports(tmp_path, monkeypatch):
    taken = take_shell_ports(monkeypatch, 1)
    kernel = grid.SharedKernel("python3")
    try:
        kernel.ready(tmp_path)
        assert kernel.ask("print(1 + 1)") == "2\n"
        (sock, connection_file), *_ = taken
        assert kernel.km.shell_port != sock.getsockname()[1]
        assert not connection_file.exists(), "the failed start's connection file was left"
    finally:
        kernel.close()
        for sock, _ in taken:
            sock.close()
    assert kernels_running() == []


def test_a_kernel_that_never_starts_is_named_with_the_last_cause(tmp_path, monkeypatch):
    tries = []

    async def refuse(self, **kwargs):
        tries.append(self)
        raise OSError(f"no start {len(tries)}")

    monkeypatch.setattr(grid._Manager, "start_kernel", refuse)
    with pytest.raises(RuntimeError, match=r"kernel 'python3' did not start.*OSError: no start 3"):
        grid.SharedKernel("python3").ready(tmp_path)
    assert len(tries) == grid.START_ATTEMPTS == 3


class _Channel:
    """A channel that hands out ``messages`` in order, then raises Empty (nothing within the
    timeout), and records each timeout asked."""

    def __init__(self, messages):
        self.messages, self.timeouts = list(messages), []

    async def get_msg(self, timeout=None):
        from queue import Empty

        self.timeouts.append(timeout)
        if not self.messages:
            raise Empty
        return self.messages.pop(0)


def _status(state: str, request: str) -> dict:
    return {
        "msg_type": "status",
        "content": {"execution_state": state},
        "parent_header": {"msg_id": request},
    }


@pytest.mark.parametrize("tail", [[], [_status("idle", "later")]])
def test_a_client_is_ready_at_the_status_that_ends_its_kernel_info_request(tail):
    """The book's kernel clients (grid._Client) stop reading IOPub at the "idle" of their request:
    what follows stays unread and nothing waits for a quiet channel; without that status (IOPub
    connected late) the client waits, as jupyter_client does, until the channel is quiet."""
    from jupyter_core.utils import run_sync

    client = grid._Client()
    client.kernel_info = lambda: "R"
    reply = {"msg_type": "kernel_info_reply", "parent_header": {"msg_id": "R"}, "content": {}}
    client._shell_channel = _Channel([reply])
    first = [_status("busy", "earlier"), _status("busy", "R")]
    client._iopub_channel = _Channel([*first, _status("idle", "R"), *tail])
    client._handle_kernel_info_reply = lambda msg: None
    run_sync(client.wait_for_ready)(timeout=5)
    assert client.iopub_channel.messages == tail  # read up to the request's "idle", no further
    assert len(client.iopub_channel.timeouts) == 3  # no read that ended in a quiet wait

    client._shell_channel = _Channel([reply])
    client._iopub_channel = _Channel(first)
    run_sync(client.wait_for_ready)(timeout=5)
    assert client.iopub_channel.timeouts == [0.2, 0.2, 0.2]  # the last one found nothing


#: How late a cell's printed output reaches the notebook client: more than the 4 s after the cell's
#: reply that nbclient waits by default before it goes on without it.
LATE = 4.5


@pytest.fixture
def late_output(monkeypatch):
    """The cell's printed line is handed to the notebook client LATE seconds after it arrived (a
    client held up on a loaded machine), in order, before the status that ends its cell."""
    from jupyter_client.channels import AsyncZMQSocketChannel

    receive = AsyncZMQSocketChannel.get_msg

    async def get_msg(self, *args, **kwargs):
        msg = await receive(self, *args, **kwargs)
        if msg["msg_type"] == "stream" and msg["content"]["text"].startswith("probe"):
            await asyncio.sleep(LATE)
        return msg

    monkeypatch.setattr(AsyncZMQSocketChannel, "get_msg", get_msg)


def _printing_notebook(path: Path, code: str = "print('probe')") -> Path:
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb = new_notebook(cells=[new_code_cell(code)], metadata={"kernelspec": kernelspec})
    nbformat.write(nb, path)
    return path


def _outputs_by_both(code: str, folder: Path) -> dict[str, list]:
    """A one-cell notebook of ``code`` run by the build's runner (book/_ext/run_notebook.py) and by
    papermill's client (reruns, the grid) on one shared kernel: each one's outputs of the cell."""
    source = _printing_notebook(folder / "source.ipynb", code)
    kernel = grid.SharedKernel("python3")
    try:
        kernel = run_notebook.execute(kernel, source, folder / "built.ipynb", timeout=60)
        grid.run_notebook(kernel, source, folder / "papermill.ipynb", {}, folder)
    finally:
        kernel.close()
    return {
        name: nbformat.read(folder / f"{name}.ipynb", as_version=4).cells[0].outputs
        for name in ("built", "papermill")
    }


def test_output_that_reaches_the_client_late_is_written(tmp_path, late_output):
    """Both clients wait for a cell's output that comes after its reply: nbclient alone waited
    4 s, then wrote the notebook without it, its warning in no log."""
    for name, outputs in _outputs_by_both("print('probe')", tmp_path).items():
        assert [o.get("text") for o in outputs] == ["probe\n"], name


def test_output_that_does_not_come_fails_the_cell(tmp_path, late_output, monkeypatch):
    """Past CLIENT_OPTIONS' wait the cell fails (the page with it): a notebook is never written
    without output its kernel sent."""
    from nbclient.exceptions import CellTimeoutError

    monkeypatch.setitem(grid.CLIENT_OPTIONS, "iopub_timeout", 1)
    source = _printing_notebook(tmp_path / "probe.ipynb")
    kernel = grid.SharedKernel("python3")
    try:
        with pytest.raises(CellTimeoutError, match="Timeout waiting for IOPub output"):
            run_notebook.execute(kernel, source, tmp_path / "built.ipynb", timeout=60)
        assert not (tmp_path / "built.ipynb").exists()
    finally:
        kernel.close()
    assert kernels_running() == []


def test_a_print_that_arrives_in_parts_is_one_output(tmp_path):
    """The kernel sends what a cell prints every 0.2 s: under load `print('probe', v)` reached the
    build's runner as "probe" and " v1" (here: a flush between the parts). Both clients keep one
    output, the text as written, so that myst-nb, which merges a cell's streams line by line,
    shows one line ("probe\\n v1" before: the interrupted-build test failed on it)."""
    from myst_nb.core.utils import coalesce_streams

    code = "import sys\nsys.stdout.write('probe')\nsys.stdout.flush()\nprint(' v1')"
    for name, outputs in _outputs_by_both(code, tmp_path).items():
        assert [o.get("text") for o in outputs] == ["probe v1\n"], name
        assert [o["text"] for o in coalesce_streams(outputs)] == ["probe v1\n"], name
