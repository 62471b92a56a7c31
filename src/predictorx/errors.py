"""The one root of the errors a client caused (issue 23 item 6): a bad request, something not
found or not allowed, a conflict. Each carries the HTTP status to answer with and one sentence for
the person; the API renders them in one handler (server/app.py) and the pages in one place
(server/web/pageroute.py), or next to the form that caused them (server/web/forms.py).

The services raise its ServiceError branch (service/errors.py), resource types ResourceError
(resources/registry.py), the store ValueTooLong (store/bounded.py) and the pages FormError. This
module imports nothing, so every layer may raise it.
"""

from __future__ import annotations


class ClientError(Exception):
    status = 400

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
