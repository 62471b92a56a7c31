"""Errors a client caused. Routes turn them into HTTP answers with the message as `detail`."""

from __future__ import annotations


class ServiceError(Exception):
    status = 400

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class Invalid(ServiceError):
    status = 422


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    status = 409


class Forbidden(ServiceError):
    status = 403
