"""The catalogue room: what is stored. Model presets, GPU specs, saved links, pasted configs
and rate counters (models), their admin, the read side (selectors), the write side (services),
Hugging Face Hub look-ups and imports (hub), and who may write how often (clients, ratelimit,
limits). It imports inputs and the estimator, never result, web or api."""
