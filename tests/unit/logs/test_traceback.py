"""logs/traceback.py: the exception a log ends in, after its last record."""
from exporter.logs.traceback import MAX_MESSAGE, Tracebacks

TB = ["Traceback (most recent call last):\n",
      '  File "/x/train.py", line 10, in <module>\n',
      "    main()\n",
      "    ^^^^^^\n"]


def feed(lines, records=()):
    t = Tracebacks()
    for i, line in enumerate(lines):
        if i in records:
            t.record()
        t.line(line)
    return t


def test_a_traceback_after_the_last_record_is_the_crash():
    t = feed(["step:1 - loss:0.5\n", *TB, "RuntimeError: NCCL communicator was aborted\n"], records={0})
    assert t.crash.exception == "RuntimeError"
    assert t.crash.message == "NCCL communicator was aborted"
    assert t.crash.line == 6


def test_records_after_a_traceback_mean_it_was_survived():
    lines = [*TB, "ValueError: bad reward\n", "step:2 - loss:0.4\n"]
    assert feed(lines, records={len(lines) - 1}).crash is None


def test_keyboard_interrupt_and_system_exit_are_stops_not_crashes():
    for exc in ("KeyboardInterrupt\n", "SystemExit: 0\n"):
        t = feed([*TB, exc])
        assert t.crash is None and t.stopped is not None


def test_ray_remote_frames_follow_the_task_error_and_the_inner_exception_wins():
    t = feed([*TB, "ray.exceptions.RayTaskError(OutOfMemoryError): ray::Actor.train() (pid=1)\n",
              "           ^^^^^^^^\n", '  File "/x/model.py", line 5, in train\n', "    f()\n",
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.46 GiB.\n",
              "(Actor pid=1) [mem] malloc returned OOM\n"])
    assert t.crash.exception == "torch.OutOfMemoryError"
    assert t.crash.message.startswith("CUDA out of memory")


def test_prefixes_colour_and_interleaved_lines():
    t = feed(["\x1b[36m(TrainActor pid=7)\x1b[0m Traceback (most recent call last):\n",
              "(TrainActor pid=7)   File \"a.py\", line 1, in f\n",
              "INFO: another process logs in between\n",
              "[rank3]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1\n"])
    assert t.crash.exception == "torch.distributed.DistBackendError"


def test_a_chained_traceback_reports_the_outermost_exception():
    t = feed([*TB, "KeyError: 'x'\n", "\n",
              "During handling of the above exception, another exception occurred:\n", "\n",
              *TB, "RuntimeError: could not load the batch\n"])
    assert t.crash.exception == "RuntimeError"


def test_no_traceback_header_no_crash_and_long_messages_are_cut():
    assert feed(["RuntimeError: printed by a reward function, no traceback\n"]).crash is None
    t = feed([*TB, "RuntimeError: " + "x" * 5000 + "\n"])
    assert len(t.crash.message) == MAX_MESSAGE
