"""Errors a client caused, as the services raise them: the service branch of the one root
(predictorx/errors.py), answered with their status and the message as `detail`."""

from __future__ import annotations

from ..errors import ClientError


class ServiceError(ClientError):
    status = 400


class Invalid(ServiceError):
    status = 422


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    status = 409


class Forbidden(ServiceError):
    status = 403
