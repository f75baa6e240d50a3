"""The spatial checker with abstention (METHODS.md §1), vectorised over every sample.

Public API
----------
``prepare(ds) -> Prepared``
    Parameter-independent precomputation, cached in ``ds.cache`` (label/role matching,
    score-sorted segments, the geometry of the default selections). Called by ``evaluate``;
    call it yourself to pay its cost up front (e.g. right after loading).
``evaluate(ds, cfg) -> VerdictArrays``
    Verdicts, reasons and confidences of every sample under ``cfg``, vectorised with numpy.
``evaluate_reference(ds, cfg) -> VerdictArrays``
    The same rules written as a plain loop over samples: the readable specification, used by
    the tests (vectorised == reference) and by the benchmark.

Rules, exactly as SpatialBench-UC applies them (checked against its published run):

* Selection of label L in one detection list: label == L (case-insensitive), score >= cut,
  box area >= min_area_fraction * W * H; the highest score wins (ties: the earlier detection).
  ``cut`` is ``max(t_det, detector threshold)`` (``cfg.primary_threshold`` /
  ``cfg.secondary_threshold``): cached detections go below what the detector itself returned,
  so the detector's own threshold is re-applied everywhere, including the ambiguity test.
* Order of the abstention tests: missing (A and/or B) > ambiguous (A, then B) > high_overlap
  (left_of/right_of only, IoU > bound) > near_boundary (|d| <= margin) > unstable.
  missing / ambiguous / high_overlap carry confidence 0 and all four components 0.
* Stability is computed only for a decided (PASS/FAIL) geometric verdict; a near_boundary sample
  carries stability 1.0. Its input, per sample: the cached perturbed detections where
  ``samples.has_perturbed``; else ``data.recorded_stability(ds)`` where finite (an imported run
  recorded it; the published data does not ship perturbed detections); else stability is
  unavailable and taken as 1.0. With ``cfg.stability_enabled`` False it is 1.0.
* Agreement: 1.0 with ``cfg.use_secondary`` False; ``cfg.neutral_agreement`` (0.5) where the
  secondary detector did not run on the image (``samples.has_secondary`` False) or did not find
  A or B; otherwise 0.5*a + 0.25*IoU(A, A2) + 0.25*IoU(B, B2) with
  a = 0.5*[v2 == verdict] + 0.5*[d*d2 >= 0], where v2 is the secondary geometric verdict
  (PASS/FAIL/UNDECIDABLE by the margin) and ``verdict`` is the sample's verdict after the
  stability test (UNDECIDABLE for near_boundary / unstable samples).
* Confidence (samples that reached the margin test, incl. near_boundary and unstable):
  (det+eps)^w_det * (geom+eps)^w_geom * (stab+eps)^w_stab * (agree+eps)^w_agree, eps = 1e-10,
  det = clip(sqrt(s_A*s_B)), geom = clip((|d| - m)/gamma), stab and agree clipped to [0, 1].

Perturbations are matched to cached detection variants by ``Perturbation.name``
(``ds.variant_names``); a configured perturbation with no cached detections is a
WorkstationError when stability has to be computed from cached detections.

All arithmetic is float64 in the reference's operation order, so verdicts, reasons, deltas,
IoUs and the four components agree with ``evaluate_reference`` to the last bit; the vectorised
confidence is computed as exp(sum of w*log(c + eps)) (numpy's pow is slow), which agrees with
the reference's product of powers to about 1e-15 relative.

How ``evaluate`` is fast (stages, each recomputed only when a parameter it reads changes)
--------------------------------------------------------------------------------------
1. ``prepare`` (no parameter): detections matched to (sample, slot) segments sorted by score;
   the geometry of every segment's first (highest-scoring) row. The selected box of a segment
   is its first row whose area passes the area filter, kept when its score passes the cut; so
   the score cut (t_det) never changes WHICH box is selected, only whether one is.
2. Area stage (``min_area_fraction``; two cached): which first rows pass the area filter, and
   the samples where the filter moves a selection past its first row, with their selections
   and geometry. A new value starts from the cached stage nearest to it: a segment's walk
   answers for any threshold between the largest area it passed over and the area of the row
   it found, and a sample whose selections are the same in every slot keeps its geometry. From
   the first change of the area filter on, each slot's first rows are indexed by their area as
   a fraction of the image, in 4,096 buckets (a radix sort; 4 bytes a sample and slot): a new
   value compares again only the first rows in the buckets between the two values and one on
   either side, and only the samples whose first rows turned or whose walks changed get their
   selections anew; the others keep the nearest stage's.
3. Selection stage (the cuts, the area stage, the perturbations used; two cached): which
   selections are present, the selected rows (``sel_*``), and the stability terms that do not
   depend on the margin (how many variants found both objects, their IoU sum).
4. Decision pass (margin, ambiguity, overlap, consistency, agreement, weights): one pass in
   cache-sized chunks with comparisons and small-integer arithmetic that finds the samples
   reaching the margin test, then the margin test, stability, agreement and confidence of
   those samples only (their inputs gathered); then the same pass over the area stage's
   samples (inputs gathered once per selection stage), scattered back. Logarithms are taken
   only where a component is neither 0 nor 1.
5. When a live earlier result has the same area filter, primary cut, ambiguity and overlap
   parameters (a margin, stability, agreement or weight change), the same samples reach the
   margin test: its delta, IoU, detection term and the other samples' reasons are reused and
   only the samples that reach the test are decided again. When a live result differs in the
   margin alone (a margin drag), its arrays are copied and only the reached samples whose
   outputs can differ between the two margins are decided again: a value compared with the
   margin (|delta|, a secondary or perturbed delta) between them, or |delta| on the geometry
   term's slope above them (``_step_chunk``). When only the weights / gamma
   change, a live earlier result's verdicts are reused and only ``conf`` and ``c_geometry``
   are recomputed; when only ``tau`` / ``name`` change, every array is reused. When a live
   result differs in the area filter alone (an area drag), its selection and decision arrays
   are copied and only the samples whose inputs the two area stages give differently (a first
   row that passes one filter and not the other, or moved selections that differ) are selected
   and decided again (``_patched``). Results share
   arrays, so they are returned read-only; the result cache holds weak references only (it
   reuses what its owner keeps alive, and keeps nothing alive).
Chunked passes (about eight chunks a pass, of 1 << 15 to 1 << 17 samples) and the area
stage's per-slot work run on up to two threads (numpy releases the GIL; ``parallel.THREADS`` /
``WORKSTATION_CHECKER_THREADS``), each taking the next chunk when free.
No float is narrowed: every one feeds a verdict comparison or an output compared bit for bit
with the reference; indices are int32 where they fit, flags bool / int8 / int16.

Modules, by stage
-----------------
``prepared`` (1: `prepare`, `Prepared`), ``area`` (2: the area stage), ``selection`` (3),
``decision`` (4: the decision pass and the kernels that decide again part of an earlier
result), ``stages`` and ``evaluation`` (5: what is kept between evaluations, and `evaluate`,
which runs the stages and reuses a live result where it can); beside them ``verdicts`` (the
result), ``geometry`` (delta, IoU and the boxes both the preparation and the passes read),
``params`` (a pass's scalars and shared array helpers), ``passes`` (a kernel over every
sample, or again at a few), ``parallel`` (chunks on up to two threads) and ``reference``
(`evaluate_reference`).
"""

from __future__ import annotations

from .evaluation import evaluate
from .geometry import EPS
from .prepared import Prepared, prepare
from .reference import evaluate_reference
from .verdicts import StorableVerdicts, VerdictArrays, VerdictColumns

__all__ = ["VerdictArrays", "VerdictColumns", "StorableVerdicts", "Prepared", "prepare", "evaluate",
           "evaluate_reference", "EPS"]
