"""Predictor X: coding-agent CLIs as teammates."""

__version__ = "0.1.0"
