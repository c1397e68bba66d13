# The warm interpreter's driver (vivarium-eval, PROTOCOL.md). The agent embeds this file and runs
# it as `python3 -I -c SOURCE`, so nothing has to be installed in a sandbox or image but python3.
# Requests come on fd 3, answers go out on fd 4, each a frame: 4 bytes big-endian length, then the
# payload (a request: the code as UTF-8; an answer: one JSON object). The first frame out says
# which Python this is. Everything runs in one namespace, one request at a time; the agent bounds
# each with a timeout by killing this process's group.
import ast, builtins, io, json, os, struct, sys, traceback

MAX_CODE = 1 << 20
MAX_STDOUT = 1 << 20
MAX_TEXT = 64 << 10


def read_exact(n):
    data = b""
    while len(data) < n:
        chunk = os.read(3, n - len(data))
        if not chunk:
            os._exit(0)  # the agent went away
        data += chunk
    return data


def send(obj):
    payload = json.dumps(obj, ensure_ascii=False).encode("utf-8")
    frame = struct.pack(">I", len(payload)) + payload
    while frame:
        frame = frame[os.write(4, frame):]


def clean(text, limit):
    """UTF-8 the agent accepts (no NUL, no lone surrogate), at most limit bytes; and whether cut."""
    data = text.replace("\0", "\\x00").encode("utf-8", "backslashreplace")
    if len(data) <= limit:
        return data.decode("utf-8"), False
    return data[:limit].decode("utf-8", "ignore"), True


class Capture(io.TextIOBase):
    """sys.stdout and sys.stderr during an eval: keeps the first MAX_STDOUT characters."""

    def __init__(self):
        self.parts, self.size, self.cut = [], 0, False

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        room = MAX_STDOUT - self.size
        if len(s) > room:
            s, self.cut = s[:max(room, 0)], True
        self.parts.append(s)
        self.size += len(s)
        return len(s)


def run(code, namespace):
    capture = Capture()
    answer = {"result": None, "error": None, "exit_code": 0}
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = capture
    try:
        try:
            tree = ast.parse(code, "<eval>", "exec")
        except SyntaxError as e:
            raise e.with_traceback(None)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, "<eval>", "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<eval>", "eval"), namespace)
            if value is not None:
                answer["result"] = repr(value)
    except BaseException as e:  # SystemExit and KeyboardInterrupt too: the interpreter stays
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_globals is DRIVER:
            tb = tb.tb_next  # start the traceback at the caller's code, not in this driver
        answer["error"] = "".join(traceback.format_exception(type(e), e, tb))
        answer["exit_code"] = 1
    finally:
        sys.stdout, sys.stderr = saved
    stdout, cut = clean("".join(capture.parts), MAX_STDOUT)
    answer["stdout"] = stdout
    answer["stdout_truncated"] = cut or capture.cut
    for key in ("result", "error"):
        if answer[key] is not None:
            answer[key], cut = clean(answer[key], MAX_TEXT)
            if cut:
                answer[key] += "... [truncated at %d bytes]" % MAX_TEXT
    return answer


def main():
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    send({"python": "%d.%d.%d" % sys.version_info[:3]})
    while True:
        (size,) = struct.unpack(">I", read_exact(4))
        if size > MAX_CODE:
            os._exit(2)
        send(run(read_exact(size).decode("utf-8"), namespace))


DRIVER = globals()
main()
