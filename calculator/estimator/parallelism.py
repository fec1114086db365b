"""How a request spreads over GPUs: tensor parallel groups, data-parallel replicas, ZeRO shards."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """Per-GPU division factors.

    Tensor parallelism (Shoeybi et al. 2019, Megatron-LM, arXiv:1909.08053 §3) splits every
    attention and MLP matrix, the attention heads and the vocabulary ``tp`` ways; norms and the
    residual stream stay whole on each GPU. The remaining ``num_gpus / tp`` GPUs are data-parallel
    replicas, across which ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054 §5) shards optimizer
    states (stage 1), gradients (stage 2) and parameters (stage 3).
    """

    tp: int
    dp: int
    zero_stage: int
    pp: int = 1
    cp: int = 1

    @property
    def shard_group(self) -> int:
        """Ranks that hold the same parameters: data-parallel and context-parallel replicas
        (Megatron-LM shards its distributed optimizer over the data-parallel group with context
        parallelism, ``get_data_parallel_group(with_context_parallel=True)``)."""
        return self.dp * self.cp

    @property
    def optimizer_shards(self) -> int:
        return self.shard_group if self.zero_stage >= 1 else 1

    @property
    def gradient_shards(self) -> int:
        return self.shard_group if self.zero_stage >= 2 else 1

    @property
    def parameter_shards(self) -> int:
        return self.shard_group if self.zero_stage >= 3 else 1

    def heads_per_gpu(self, heads: int) -> int:
        """Heads on one GPU; a head is never split, so KV heads are replicated when kv < tp."""
        return max(1, -(-heads // self.tp))


def plan_for(
    *,
    num_gpus: int,
    tensor_parallel: int,
    zero_stage: int,
    pipeline_parallel: int = 1,
    context_parallel: int = 1,
) -> Plan:
    """``num_gpus = DP × TP × PP × CP`` (Megatron-LM's rank layout; Narayanan et al. 2021,
    arXiv:2104.04473 §3): what is left after the model-parallel dimensions is data parallel."""
    model_parallel = tensor_parallel * pipeline_parallel * context_parallel
    return Plan(
        tp=tensor_parallel,
        dp=num_gpus // model_parallel,
        zero_stage=zero_stage,
        pp=pipeline_parallel,
        cp=context_parallel,
    )
