from .base import METRICS, MetricInput, MetricResult  # noqa: F401
from . import general, koala, merlim, mmcbench, mmr3  # noqa: F401  (registration)
