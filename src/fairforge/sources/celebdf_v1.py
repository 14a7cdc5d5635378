"""Celeb-DF v1 (``celebdf_v1``): the first release, which the Assessment tests on next to v2
(its Table 6, cross-dataset AUC after training on FaceForensics++).

v1 holds 408 real videos (158 of 13 celebrities, 250 more from YouTube, one subject each) and
795 fakes made from the celebrities' videos. Its archive as distributed now has v2's folder
names (``Celeb-real/id0_0000.mp4``, ``YouTube-real/00000.mp4``,
``Celeb-synthesis/id0_id1_0000.mp4``) and its own ``List_of_testing_videos.txt``; the first
archive (September 2019) named them ``Real_1`` (the celebrities), ``Real_2`` (the YouTube
subjects), ``deepfake`` and ``test.txt``, which are read too. A file named otherwise than
v2's pattern stays as a row with ``ok=False`` and the reason. Everything else (labels, the
official split, its ``subject_disjoint`` default, ``attributes``) is as for v2
(:mod:`fairforge.sources.celebdf`); the fakes' method is ``Celeb-synthesis`` as in v2, so
that a detector trained on one version's fakes is tested on the other's under one name.
"""

from __future__ import annotations

from fairforge.sources.base import ADAPTERS
from fairforge.sources.celebdf import CELEBDF_TEST_LIST, CelebDF


@ADAPTERS.register("celebdf_v1")
class CelebDFv1(CelebDF):
    """Celeb-DF v1 in either of its released layouts (module docstring); options as
    ``celebdf``."""

    CELEB_REAL = ("Celeb-real", "Real_1")
    YOUTUBE_REAL = ("YouTube-real", "Real_2")
    SYNTHESIS = ("Celeb-synthesis", "deepfake")
    TEST_LISTS = (CELEBDF_TEST_LIST, "test.txt")
