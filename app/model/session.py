"""`Session`: what the lab and the Models page share, as one class both derive from.

A configuration is built into runs off the session's loop (a `SessionRunner` job tagged "build": a newer build
supersedes an older one), the runs are installed when the build comes back, and played, paused, reset and
stepped; why they stopped is a `Notice`. A build asked for while one is under way with Play pressed plays once
it is installed (a link with play=1 opens before its runs exist).
"""
from __future__ import annotations

import logging
from collections.abc import Callable

import param

from .reasons import Notice, NoticeKind
from .runner import USER_ERRORS, Failure, SessionRunner

log = logging.getLogger(__name__)


class Session(param.Parameterized):
    """A subclass says how to build (`build_job`), what a build's outcome does (`install`), whether the runs can
    play (`can_run`) and how to play them (`play`)."""

    playing = param.Boolean(default=False)
    building = param.Boolean(default=False, doc="a build is under way on a worker")
    notice = param.ClassSelector(class_=Notice, default=None, allow_None=True,
                                 doc="why the run stopped, or what was ignored; None: nothing to say")
    version = param.Integer(default=0, doc="bumped whenever new runs are installed")
    stepped = param.Event(doc="a step taken outside the frame loop has finished")

    def __init__(self, schedule: Callable | None = None, **params):
        """`schedule(fn)` runs fn on the session's event loop; with it, builds run on a worker (the first one
        too, so a page opens before its runs exist). Without it (tests, scripts, the CLI) they run in place."""
        super().__init__(**params)
        self.schedule = schedule
        self.runner = SessionRunner(schedule, on_failure=self.failed, on_queued=self.queued)
        self._play_after = False

    # -- what a subclass says ----------------------------------------------------------------------------
    def build_job(self, **options) -> dict:
        """The build's `SessionRunner.run` arguments: `work` (returns the outcome `install` takes), and any of
        `pool`, `here` (build in place, now), `limit_s` with `late` (what giving up says)."""
        raise NotImplementedError

    def install(self, out) -> None:
        raise NotImplementedError

    @property
    def can_run(self) -> bool:
        raise NotImplementedError

    def play(self) -> None:
        raise NotImplementedError

    # -- shared -------------------------------------------------------------------------------------------
    def rebuild(self, **options) -> None:
        """New runs from the configuration; the old ones stay on screen (and play) until they are ready."""
        job = self.build_job(**options)
        here = job.pop("here", False) or self.runner.inline
        late = job.pop("late", None)
        if not here:
            self.building = True
        self.runner.run(job.pop("work"), self._finish, tag="build", here=here,
                        late=None if late is None else (lambda: self._gave_up(late)), **job)

    def _finish(self, out) -> None:
        self.building = False
        self.install(out)
        if self._play_after:
            self._play_after = False
            self.play()

    def _gave_up(self, say: Callable[[], None]) -> None:
        self.building = False
        self._play_after = False
        say()

    def pause(self, notice: Notice | None = None) -> None:
        """Pause, saying why when the session itself stops the run."""
        # the notice first: the views' reaction to the pause may fail (see failed), and the user is told anyway
        if notice is not None:
            self.notice = notice
        self.playing = False
        self._play_after = False

    def reset(self, **options) -> None:
        """The same configuration from step 0, playing on if it played (or was about to)."""
        playing = self.playing or self._play_after
        self.rebuild(**options)
        if self.building:
            self._play_after = playing
        else:
            self.playing = playing and self.can_run

    def failed(self, err: BaseException | Failure) -> None:
        """Work of this session (a frame, a step on a worker) raised: stop the run and say so; a bug is logged
        with its traceback and said to be one."""
        failure = err if isinstance(err, Failure) else Failure(err, bug=not isinstance(err, USER_ERRORS))
        if failure.bug and not isinstance(err, Failure):
            log.error("a session's run failed", exc_info=err)
        kind = NoticeKind.INTERNAL if failure.bug else NoticeKind.FAILED
        notice = Notice(kind, f"the run stopped: {failure.message}")
        try:
            self.pause(notice)
        except Exception as again:
            # what broke the work can break the views' reaction to the pause too (a module half-imported on a
            # worker breaks every Bokeh stream; issue 28): the run still stops, unheard, and the notice stays
            log.error("stopping a failed run failed too", exc_info=again)
            with param.parameterized.discard_events(self):
                self.pause(notice)

    def queued(self, message: str | None) -> None:
        """Heavy work of this session waits for the compute pool (message), or has been admitted (None)."""
        if message is not None:
            if self.notice is None or self.notice.kind is NoticeKind.QUEUED:
                self.notice = Notice(NoticeKind.QUEUED, f"{message[0].upper()}{message[1:]}: it starts as soon as "
                                                        "one of them ends.")
        elif self.notice is not None and self.notice.kind is NoticeKind.QUEUED:
            self.notice = None

    def close(self) -> None:
        """End of session: stop, and let nothing more come back to it."""
        self.pause()
        self.runner.close()
