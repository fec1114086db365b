"""The result room: one calculation and how it is presented. The estimate for a request with
its verdicts, speed and advice (calculation), the figures as the page, exports and API show them
(presenters, formatting), the reverse searches such as the largest model that fits (reverse),
the charts, and saved snapshots of a result (snapshots). It imports catalogue, inputs and the
estimator, never web or api."""
