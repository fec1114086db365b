"""Marking English text for translation without importing Django."""


def gettext_noop(message: str) -> str:
    """Marks a message for translation (``makemessages`` extracts it); the web layer translates
    assumption templates and source notes and fills in the values. The estimator stays in
    English."""
    return message
