"""``threads: auto`` (hygrail/threads.py, issue #48): the free cores, at least one; a number as given;
anything else a one-line error; the tests' HYGRAIL_THREADS=1 reaches the composed config."""

import pytest

from hygrail import threads


def test_auto_is_the_free_cores_at_least_one(monkeypatch):
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (0.2, 0.0, 0.0), raising=False)
    assert threads.resolve("auto") == 2
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (0.6, 0.0, 0.0), raising=False)  # a start-up, not a job
    assert threads.resolve("auto") == 2
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (1.4, 0.0, 0.0), raising=False)
    assert threads.resolve("auto") == 1
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (7.0, 0.0, 0.0), raising=False)
    assert threads.resolve("AUTO") == 1
    assert threads.resolve(3) == 3 and threads.resolve("2") == 2


@pytest.mark.parametrize("bad", [0, "-1", "two", 1.5])
def test_a_bad_thread_count_is_a_one_line_error(bad):
    with pytest.raises(ValueError, match=r"threads=.*: expected auto or a whole number >= 1"):
        threads.resolve(bad)


def test_the_config_reads_the_environment(monkeypatch):
    from hydra import compose, initialize_config_dir

    from conftest import CONF

    for env, want in (("1", 1), ("2", 2)):
        monkeypatch.setenv("HYGRAIL_THREADS", env)
        with initialize_config_dir(str(CONF), version_base="1.3"):
            assert compose("config").threads == want


def test_auto_is_read_once_not_again_under_the_jobs_own_load(monkeypatch):
    """A cold make discover trained on one thread of two: the config re-read ``auto`` after minutes of
    the job's own work had raised the load average."""
    from hydra import compose, initialize_config_dir

    from conftest import CONF

    monkeypatch.delenv("HYGRAIL_THREADS", raising=False)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (0.2, 0.0, 0.0), raising=False)
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config")
    assert cfg.threads == 2
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (1.2, 0.0, 0.0), raising=False)  # the job's own load
    assert cfg.threads == 2
