# SLURM resources shared by the workflow (rules/common.smk) and the SLURM mechanics test (tests/cluster/mechanics):
# a job's partition from its GPU need, memory and wall time that grow with `attempt` (modprefs.cluster;
# docs/cluster.md).
import os

from snakemake.exceptions import WorkflowError

from modprefs import cluster as slurm_costs

# --- SLURM resources (modprefs.cluster; docs/cluster.md) -------------------------------------------------------------
# Every non-local rule's memory and wall time come from here: measured costs x margin, x2 per retry (`attempt`), and
# its partition from its GPU need. The lab names its partitions once in the profile's default-resources.
#: the main process of a cluster run (not a local run, not a job inside SLURM): a GPU job without a GPU partition
#: is an error here
CLUSTER_RUN = not workflow.local_exec and not workflow.remote_exec


def _profile_default(name: str) -> str | None:
    """A string the profile (or --default-resources) sets for every job, e.g. slurm_partition; None if unset."""
    from snakemake.resources import Resources

    defaults = workflow.resource_settings.default_resources
    if not defaults:
        return None
    try:
        res = Resources.from_mapping(defaults)[name]
    except KeyError:
        return None
    value = str(res.raw).strip().strip("'\"")
    return os.path.expandvars(value) or None


def partition(gpus: int) -> str | None:
    """The partition of a job with ``gpus`` GPUs: the profile's gpu_partition, else its slurm_partition."""
    try:
        return slurm_costs.partition_for(
            gpus, _profile_default("slurm_partition"), _profile_default("gpu_partition"), CLUSTER_RUN
        )
    except slurm_costs.GpuPartitionMissing as err:
        raise WorkflowError(str(err))


def grown(base: int):
    """A memory or runtime resource: ``base`` on the first attempt, x2 on each retry."""
    return lambda wildcards, attempt: slurm_costs.grown(base, attempt)


def grown_minutes(work_seconds):
    """A runtime resource from a job's measured work (``work_seconds(wildcards)``): margin, job start, x2 per retry."""
    return lambda wildcards, attempt: slurm_costs.grown(slurm_costs.minutes(work_seconds(wildcards)), attempt)


def gpu_job_threads(gpus: int, threads: int) -> int:
    """A GPU job's threads on a cluster: the profile's `cores`, so that one GPU job fills a layer of its group job and
    the group asks for one GPU (Snakemake sums the GPUs of jobs that fit side by side in `cores`)."""
    if gpus and not workflow.local_exec:
        try:
            return max(threads, int(workflow.cores or threads))
        except (WorkflowError, TypeError, ValueError):
            return threads
    return threads
