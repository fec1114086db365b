"""The inputs room: what a visitor sends and in which language it is read and written back.
The calculator's fields, choices, bounds and defaults (forms), the size limits on posted fields
(uploads), and numbers and catalogue names in the visitor's language (l10n). It imports only
the estimator; every other room may import it."""
