"""find_distance: the distance verify reports, for two embeddings (cosine, euclidean, euclidean_l2,
angular), computed in float64 and rounded to 6 decimals as DeepFace reports it."""
from typing import Sequence, Union

import numpy as np


def _l2(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v)
    return v if norm == 0 else v / norm


def find_distance(
    alpha_embedding: Union[np.ndarray, Sequence[float]],
    beta_embedding: Union[np.ndarray, Sequence[float]],
    distance_metric: str,
) -> np.float64:
    a = np.asarray(alpha_embedding, dtype=np.float64)
    b = np.asarray(beta_embedding, dtype=np.float64)
    if distance_metric == "cosine":
        d = 1 - np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))
    elif distance_metric == "euclidean":
        d = np.linalg.norm(a - b)
    elif distance_metric == "euclidean_l2":
        d = np.linalg.norm(_l2(a) - _l2(b))
    elif distance_metric == "angular":
        d = np.arccos(np.clip(np.dot(_l2(a), _l2(b)), -1.0, 1.0)) / np.pi
    else:
        raise ValueError(f"Invalid distance_metric passed - {distance_metric}")
    return np.float64(np.round(d, 6))
