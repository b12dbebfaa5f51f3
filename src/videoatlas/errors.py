"""The user-facing error kinds. The CLI turns each into one clear line and an exit code."""

from __future__ import annotations


class VideoAtlasError(Exception):
    """Base of every error that is the user's to fix (bad input, unreachable endpoint, unreadable video)."""

    exit_code = 1
    record: object | None = None
    """For errors of a model call: the call's record (tokens spent, attempts), attached by the client."""


class BadInputError(VideoAtlasError):
    """An argument or input value that cannot be used as given."""

    exit_code = 2


class VideoError(VideoAtlasError):
    """A video file that is missing, unreadable, or has no usable video stream."""

    exit_code = 3


class SubtitleError(VideoAtlasError):
    """A subtitle file that cannot be read or parsed."""

    exit_code = 4


class EndpointError(VideoAtlasError):
    """The VLM endpoint could not be reached or refused the request."""

    exit_code = 5


class EndpointUnreachableError(EndpointError):
    """No server answers at the endpoint's address (nothing listening, a wrong URL, a network failure)."""


class ModelNotServedError(EndpointError):
    """The endpoint is up but does not serve the requested model."""


class ImageLimitError(BadInputError):
    """An image (or the number of images) exceeds what the server accepts; refused before sending."""


class ModelReplyError(VideoAtlasError):
    """The model's reply could not be turned into the asked-for structure, even after repair and a re-ask."""

    exit_code = 6


class RunOwnedError(VideoAtlasError):
    """The run is being run by another live process (its lease is held and renewed)."""

    exit_code = 7


class OutageError(VideoAtlasError):
    """Something the runs depend on (the VLM endpoint, the database) went away for longer than the patience.

    Not the question's fault: its run is left ``interrupted`` (resumable), never scored as a wrong answer.
    The exit code is sysexits' EX_TEMPFAIL (a temporary failure: run the same command again).
    """

    exit_code = 75


class EndpointDownError(OutageError):
    """The VLM endpoint answered before, then stopped answering for longer than the patience."""


class DatabaseDownError(OutageError):
    """The run store or the checkpointer lost its database for longer than the patience."""
