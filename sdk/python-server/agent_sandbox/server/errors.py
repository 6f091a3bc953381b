"""The one exception a handler raises to answer with an HTTP error."""

from __future__ import annotations

from typing import Any


class HttpError(Exception):
    """An error answer: `status`, a one-line `message` and the argument it is about."""

    def __init__(self, status: int, message: str, field: str | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.code = code or _CODES.get(status, "internal")

    def body(self) -> dict[str, Any]:
        """The JSON error body: `code`, `message` and, for bad input, `field`."""
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            body["field"] = self.field
        return body


_CODES = {400: "invalid_argument", 403: "permission_denied", 404: "not_found",
          405: "method_not_allowed", 409: "already_exists", 413: "resource_exhausted",
          500: "internal", 503: "unavailable", 504: "deadline_exceeded"}


def bad_input(field: str, message: str) -> HttpError:
    """A 400 naming the argument at fault."""
    return HttpError(400, f"{field}: {message}", field=field)


def from_os_error(error: OSError, path: str) -> HttpError:
    """The HTTP error for a failed file operation on `path`."""
    reason = error.strerror or str(error)
    if isinstance(error, FileNotFoundError):
        return HttpError(404, f"{path}: no such file or directory", field="path")
    if isinstance(error, FileExistsError):
        return HttpError(409, f"{path}: already exists", field="path")
    if isinstance(error, PermissionError):
        return HttpError(403, f"{path}: permission denied", field="path")
    if isinstance(error, (IsADirectoryError, NotADirectoryError)):
        return HttpError(400, f"{path}: {reason}", field="path")
    return HttpError(500, f"{path}: {reason}")
