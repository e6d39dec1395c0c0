# Two threads block in known places; each prints, as the interpreter itself sees it, its
# native thread id and its frames (innermost first: qualified name, file, line), then the
# program waits for a line on standard input.
import json
import sys
import threading


def frames_here(depth):
    f = sys._getframe(depth)
    out = []
    while f is not None:
        c = f.f_code
        out.append([getattr(c, "co_qualname", c.co_name), c.co_filename, f.f_lineno])
        f = f.f_back
    return out


PRINT = threading.Lock()


def report(depth):
    line = json.dumps({"tid": threading.get_native_id(), "frames": frames_here(depth + 2)})
    with PRINT:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    return True


class Worker:
    def run(self, ev):
        return self.deeper(ev)

    def deeper(self, ev):
        return report(0) and ev.acquire()


def through_c(ev):
    # map() is C code: the frames it calls run in a C-level evaluation of their own.
    return list(map(lambda _: gen_wait(), [0]))


def gen_wait():
    for x in generator():
        return x


def generator():
    yield report(0) and sys.stdin.readline()


def main():
    ev = threading.Lock()  # held until standard input has a line: acquire() blocks in C
    ev.acquire()
    t = threading.Thread(target=Worker().run, args=(ev,), name="worker")
    t.start()
    through_c(ev)
    ev.release()
    t.join()


main()
