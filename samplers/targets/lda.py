"""Latent Dirichlet allocation in the expanded-mean parameterisation (Patterson & Teh 2013), for online LDA:
the recipe paper's §4.2 (Supplement F.2, Eqs. S.18-S.19) and the SCIR paper's §4.1.

Model. K topics over W words; document d has topic proportions eta_d ~ Dir(doc_alpha) (collapsed) and each
token j a topic z_dj ~ eta_d and a word x_dj ~ pi_{z_dj}. The state of a chain is theta (K x W, flattened
row-major to d = K W), theta > 0, with pi_k = theta_k / sum_w theta_kw. Given the topic counts n_kw of the
assignments, theta_kw ~ Gamma(beta + n_kw, 1) independently (the SCIR paper's gamma form), so pi_k ~ Dir(beta + n_k):

    U(theta | z) = sum_kw theta_kw - (beta + n_kw - 1) log theta_kw.

The n_kw are not observed: a minibatch S of documents gives them by Gibbs sweeps of each document's
assignments given pi, with eta_d collapsed (Eq. S.19): p(z_j = k | rest) ∝ (doc_alpha + n_dk^{\\j}) pi_{k x_j}.
Their average over the kept sweeps, summed over S and scaled by N/|S|, is the expected count of S.18:

* `shape_estimate`: a-hat = beta + (N/|S|) sum_{d in S} E n_dkw, per coordinate: what SCIR's exact CIR
  transition and gSGRHMC's splitting integrator use (pi normalises per topic row, the transition is per coordinate);
* `batch_grad` + `prior_grad`: the minibatch gradient of U, -(sum_d E n_dkw) / theta and 1 - (beta - 1) / theta
  (the oracle scales the first by N/|S|): what SGLD, SGHMC and gSGRHMC's Euler step use. With `form="pi"` the
  likelihood is that of pi (the recipe paper's Eq. S.29) and the first gains + (sum_d E n_dk.) / theta_k.;
  `row_force` gives that term from a-hat for gSGRHMC's splitting step;
* `block_sum` (a topic row's sum): with a-hat, SGRLD's drift in Patterson & Teh's own form,
  beta - theta + (N/|S|) sum_d (n_dkw - pi_kw n_dk.) = a-hat - theta - block_sum(a-hat - beta) theta / block_sum(theta).

The Gibbs sweeps are vectorised across chains and documents: each chain's batch is padded to its longest
document, and the loop runs over token positions and sweeps only.

Corpora: `synthetic_corpus` (drawn from the model itself, sparse topics, seeded), `reuters_corpus` (the 395
Reuters documents shipped in the `lda` package) and `uci_corpus` (a user's docword file in the UCI
bag-of-words format). Held-out perplexity is by document completion (Wallach et al. 2009): the topic
proportions of each held-out document are estimated by a few Gibbs sweeps on the first half of its tokens,
given pi, and the second half is scored.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
from scipy import special

from samplers.targets.live import LIVE_MODELS, LiveModel
from samplers.targets.models import DataFileError
from samplers.targets.potential import PotentialError
from samplers.targets.simplex import SimplexPotential

SWEEPS, BURN = 4, 2              # Gibbs sweeps per minibatch document, of which the first BURN are not averaged
COMPLETION_SWEEPS, COMPLETION_BURN = 6, 2   # on a held-out document's first half


# ----------------------------------------------------------------------------------
# corpora
# ----------------------------------------------------------------------------------
@dataclass
class Corpus:
    """Documents as one flat array of word ids: document i is words[starts[i] : starts[i] + lengths[i]].

    Tokens are in a seeded random order within each document (a bag of words has none), so that a document's
    first half is a fair sample of it for document completion."""
    words: np.ndarray          # (T,) int
    starts: np.ndarray         # (D,)
    lengths: np.ndarray        # (D,)
    vocabulary: int            # W
    name: str = ""

    @property
    def n(self) -> int:
        return len(self.lengths)

    def padded(self, idx: np.ndarray, width: int | None = None):
        """The documents idx (any shape) as words (..., L) and valid (..., L), L their longest (or width)."""
        lengths = self.lengths[idx]
        width = int(lengths.max()) if width is None else width
        pos = np.arange(width)
        valid = pos < lengths[..., None]
        words = self.words[np.where(valid, self.starts[idx][..., None] + pos, 0)]
        return words, valid

    def subset(self, docs: np.ndarray) -> Corpus:
        lengths = self.lengths[docs]
        words, valid = self.padded(docs)
        return Corpus(words[valid], np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths, self.vocabulary,
                      self.name)


def corpus_from_counts(docs, word_ids, counts, vocabulary: int, seed: int = 0, name: str = "") -> Corpus:
    """A corpus from bag-of-words triples (document, word, count), documents numbered 0..D-1; empty ones dropped."""
    docs, word_ids, counts = (np.asarray(a, np.int64) for a in (docs, word_ids, counts))
    order = np.lexsort((word_ids, docs))
    docs, word_ids, counts = docs[order], word_ids[order], counts[order]
    tok_doc = np.repeat(docs, counts)
    words = np.repeat(word_ids, counts)
    # shuffle within documents: sort by (document, random key)
    key = np.random.default_rng(seed).random(len(words))
    perm = np.lexsort((key, tok_doc))
    words, tok_doc = words[perm], tok_doc[perm]
    present, lengths = np.unique(tok_doc, return_counts=True)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return Corpus(words.astype(np.int32), starts, lengths, int(vocabulary), name)


def synthetic_corpus(docs: int, topics: int, vocabulary: int, mean_length: int, seed: int = 0,
                     topic_beta: float = 0.05, doc_alpha: float = 0.1):
    """A corpus drawn from LDA itself: pi_k ~ Dir(topic_beta) (sparse for topic_beta << 1), eta_d ~ Dir(doc_alpha),
    lengths 2 + Poisson(mean_length - 2). Returns the corpus and the true topics (K, W)."""
    rng = np.random.default_rng(10_000 + seed)
    pi = rng.dirichlet(np.full(vocabulary, topic_beta), size=topics)
    eta = rng.dirichlet(np.full(topics, doc_alpha), size=docs)
    lengths = 2 + rng.poisson(mean_length - 2, size=docs)
    tok_doc = np.repeat(np.arange(docs), lengths)
    # topic of each token by inverse CDF of its document's eta, then its word from that topic
    u = rng.random(len(tok_doc))
    z = np.minimum((np.cumsum(eta, 1)[tok_doc] < u[:, None]).sum(1), topics - 1)
    cum_pi = np.cumsum(pi, 1)
    words = np.empty(len(z), np.int32)
    for k in range(topics):           # K draws by inverse CDF (a loop over topics, not tokens)
        at = np.flatnonzero(z == k)
        words[at] = np.minimum(np.searchsorted(cum_pi[k], rng.random(len(at)) * cum_pi[k, -1]), vocabulary - 1)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return Corpus(words, starts, lengths, vocabulary, f"synthetic LDA, {docs} documents"), pi


def reuters_corpus() -> Corpus:
    """The Reuters sample of the `lda` package: 395 documents, 4,258 words, 84,010 tokens."""
    import lda.datasets
    X = lda.datasets.load_reuters()
    d, w = np.nonzero(X)
    return corpus_from_counts(d, w, X[d, w], X.shape[1], name="Reuters sample (lda package)")


def uci_corpus(path) -> Corpus:
    """A docword file in the UCI bag-of-words format: lines D, W, NNZ, then NNZ lines `docID wordID count`
    (1-based ids). Blank lines are skipped. DataFileError names the file, line and field of bad input."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise DataFileError(f"{path}: cannot read the file ({e.strerror or e})") from None
    numbered = [(i + 1, line.split()) for i, line in enumerate(lines) if line.strip()]

    def integer(lineno, text, what, low, high=None):
        try:
            v = int(text)
        except ValueError:
            raise DataFileError(f"{path}, line {lineno}: {what} must be an integer, got '{text}'") from None
        if v < low or (high is not None and v > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise DataFileError(f"{path}, line {lineno}: {what} must be {bound}, got {v}")
        return v

    if len(numbered) < 3:
        raise DataFileError(f"{path}: a UCI docword file starts with three lines D, W and NNZ; "
                            f"found {len(numbered)} non-blank lines")
    header = []
    for (lineno, fields), what in zip(numbered[:3], ("D (documents)", "W (vocabulary size)", "NNZ (entries)")):
        if len(fields) != 1:
            raise DataFileError(f"{path}, line {lineno}: the header line {what} holds one number, got "
                                f"{len(fields)} fields")
        header.append(integer(lineno, fields[0], what, 1))
    D, W, nnz = header
    body = numbered[3:]
    if len(body) != nnz:
        raise DataFileError(f"{path}: the header says NNZ = {nnz} entries, the file has {len(body)}")
    triples = np.empty((nnz, 3), np.int64)
    for row, (lineno, fields) in enumerate(body):
        if len(fields) != 3:
            raise DataFileError(f"{path}, line {lineno}: expected 3 fields 'docID wordID count', got {len(fields)}")
        triples[row] = (integer(lineno, fields[0], "field 1 (docID)", 1, D),
                        integer(lineno, fields[1], "field 2 (wordID)", 1, W),
                        integer(lineno, fields[2], "field 3 (count)", 1))
    return corpus_from_counts(triples[:, 0] - 1, triples[:, 1] - 1, triples[:, 2], W, name=path.name)


def split_heldout(corpus: Corpus, held_out: int, seed: int = 0) -> tuple[Corpus, Corpus]:
    """(training, held-out) documents by a seeded permutation; held-out documents have at least 2 tokens."""
    order = np.random.default_rng(20_000 + seed).permutation(corpus.n)
    eligible = order[corpus.lengths[order] >= 2]
    if held_out >= len(eligible):
        raise PotentialError(f"cannot hold out {held_out} of {corpus.n} documents "
                             f"({len(eligible)} have two or more tokens)")
    test = np.sort(eligible[:held_out])
    train = np.setdiff1d(np.arange(corpus.n), test)
    return corpus.subset(train), corpus.subset(test)


# ----------------------------------------------------------------------------------
# Gibbs sweeps of the topic assignments, given pi
# ----------------------------------------------------------------------------------
def gibbs_assignments(like, valid, doc_alpha, sweeps, burn, rng):
    """Collapsed Gibbs sweeps (Eq. S.19) over documents in parallel: like (B, L, K) holds pi_{k, x_j} for each
    document's token j, valid (B, L) marks real tokens. Returns the kept sweeps' assignments (sweeps - burn, B, L)
    and their document-topic counts (sweeps - burn, B, K).

    The first assignment is drawn from pi alone (z_j ∝ pi_{k x_j}); each sweep then visits the positions in order,
    all documents at once."""
    B, L, K = like.shape
    rows = np.arange(B)
    cum = np.cumsum(like, axis=2)
    z = np.minimum((cum < rng.random((B, L, 1)) * cum[:, :, -1:]).sum(2), K - 1)
    weight = valid.astype(float)
    ndk = np.zeros((B, K))
    np.add.at(ndk, (np.repeat(rows, L), z.ravel()), weight.ravel())
    kept_z, kept_n = [], []
    for sweep in range(sweeps):
        for j in range(L):
            w = weight[:, j]
            ndk[rows, z[:, j]] -= w
            c = np.cumsum((ndk + doc_alpha) * like[:, j], axis=1)
            new = np.minimum((c < rng.random((B, 1)) * c[:, -1:]).sum(1), K - 1)
            ndk[rows, new] += w
            z[:, j] = new
        if sweep >= burn:
            kept_z.append(z.copy())
            kept_n.append(ndk.copy())
    return np.array(kept_z), np.array(kept_n)


def topic_words(theta: np.ndarray, topics: int) -> np.ndarray:
    """pi (chains, K, W): each topic row of |theta| normalised."""
    t = np.abs(theta).reshape(theta.shape[0], topics, -1)
    return t / t.sum(2, keepdims=True)


@dataclass
class LDAData:
    """The training documents and the priors: what the simplex samplers' minibatches read.

    `alpha` is the prior shape of every theta_kw (beta of the model: the simplex family's name for the
    prior shape); `doc_alpha` is the documents' Dirichlet parameter.

    `form` is the likelihood the gradient differentiates. "gamma" (the SCIR paper's): the counts as Poisson-like
    powers of theta, -log p = sum_kw -n_kw log theta_kw, so theta_kw | z ~ Gamma(beta + n_kw, 1). "pi" (the recipe
    paper's Eq. S.29, Patterson & Teh's): the words' likelihood under pi_k = theta_k / theta_k.,
    -log p = sum_kw -n_kw log theta_kw + sum_k n_k. log theta_k., whose gradient adds n_k. / theta_k.. Both give
    pi | z ~ Dir(beta + n_k); they differ in the law of the totals theta_k. (Gamma(W beta + n_k.) against
    Gamma(W beta)), so in the size of a step relative to theta."""
    corpus: Corpus
    topics: int
    beta: float
    doc_alpha: float
    sweeps: int = SWEEPS
    burn: int = BURN
    form: str = "gamma"
    latent = True     # the minibatch gradient draws latent assignments from the oracle's rng

    @property
    def n(self) -> int:
        return self.corpus.n

    @property
    def vocabulary(self) -> int:
        return self.corpus.vocabulary

    @property
    def d(self) -> int:
        return self.topics * self.vocabulary

    @property
    def alpha(self) -> float:
        return self.beta

    def expected_counts(self, theta, idx, rng) -> np.ndarray:
        """sum over each chain's documents idx (chains, n) of E n_dkw, (chains, K, W): averages over the kept Gibbs
        sweeps given the chain's pi."""
        chains, n = idx.shape
        K, W = self.topics, self.vocabulary
        words, valid = self.corpus.padded(idx)                       # (chains, n, L)
        piT = topic_words(theta, K).transpose(0, 2, 1)               # (chains, W, K)
        like = piT[np.arange(chains)[:, None, None], words].reshape(chains * n, -1, K)
        z, _ = gibbs_assignments(like, valid.reshape(chains * n, -1), self.doc_alpha, self.sweeps, self.burn,
                                   rng)
        kept = len(z)
        chain = np.repeat(np.arange(chains), n * words.shape[2]).reshape(1, chains * n, -1)
        flat = ((chain * K + z) * W + words.reshape(1, chains * n, -1))[:, valid.reshape(chains * n, -1)]
        counts = np.bincount(flat.ravel(), minlength=chains * K * W).reshape(chains, K, W) / kept
        return counts

    def shape_estimate(self, idx, theta, rng):
        """a-hat = beta + (N/n) sum_{d in S} E n_dkw (chains, d); idx None: every document."""
        idx = np.broadcast_to(np.arange(self.n), (theta.shape[0], self.n)) if idx is None else idx
        counts = self.expected_counts(theta, idx, rng)
        return self.beta + (self.n / idx.shape[1]) * counts.reshape(theta.shape[0], -1)

    def block_sum(self, x):
        """Each topic row's sum, on each of its coordinates (chains, d): SGRLD's totals (N/n) sum_d n_dk. from
        a-hat - beta, and theta_k. for pi_kw = theta_kw / theta_k.."""
        rows = x.reshape(x.shape[0], self.topics, -1)
        return np.broadcast_to(rows.sum(2, keepdims=True), rows.shape).reshape(x.shape)

    def batch_grad(self, theta, idx, rng):
        """sum_{d in S} of the gradient of -log p(words of d | theta) at the expected counts (chains, d), which the
        oracle scales by N/n: -E n_dkw / theta, plus E n_dk. / theta_k. in the "pi" form (Eq. S.29)."""
        counts = self.expected_counts(theta, idx, rng).reshape(theta.shape[0], -1)
        t = np.abs(theta)
        g = -counts / t
        if self.form == "pi":
            g += self.block_sum(counts) / self.block_sum(t)
        return g

    def row_force(self, a_hat, theta):
        """The "pi" form's term of the gradient of U from a-hat: (N/n) E n_k. / theta_k. = block_sum(a-hat - beta) /
        block_sum(theta) on each coordinate (chains, d); zero in the gamma form."""
        if self.form != "pi":
            return np.zeros_like(theta)
        return self.block_sum(a_hat - self.beta) / self.block_sum(np.abs(theta))

    def prior_grad(self, theta):
        return 1.0 - (self.beta - 1.0) / np.abs(theta)

    def prior_U(self, theta):
        t = np.abs(theta)
        return (t - (self.beta - 1.0) * np.log(t)).sum(-1)

    def example_losses(self, theta, idx):
        raise PotentialError("LDA's likelihood of a document needs its topic assignments summed out: "
                             "the samplers here use gradients only")


# ----------------------------------------------------------------------------------
# held-out perplexity by document completion
# ----------------------------------------------------------------------------------
@dataclass
class HeldOut:
    """Held-out documents split into an observed first half and a scored second half (padded)."""
    observed: np.ndarray        # (H, L1) word ids
    observed_valid: np.ndarray
    scored: np.ndarray          # (H, L2)
    scored_valid: np.ndarray

    @classmethod
    def from_corpus(cls, corpus: Corpus) -> HeldOut:
        words, valid = corpus.padded(np.arange(corpus.n))
        first = corpus.lengths // 2
        pos = np.arange(words.shape[1])
        obs_valid = pos < first[:, None]
        w1 = int(first.max())
        rest = corpus.lengths - first
        w2 = int(rest.max())
        # the second half, shifted to start at column 0
        src = np.minimum(first[:, None] + np.arange(w2), words.shape[1] - 1)
        scored = np.take_along_axis(words, src, axis=1)
        return cls(words[:, :w1], obs_valid[:, :w1], scored, np.arange(w2) < rest[:, None])

    @property
    def tokens(self) -> int:
        return int(self.scored_valid.sum())


def completion_proportions(pi, held: HeldOut, doc_alpha, rng, sweeps=COMPLETION_SWEEPS, burn=COMPLETION_BURN):
    """Each chain's estimate of the held-out documents' topic proportions from their first halves:
    the mean over the kept sweeps of (n_dk + doc_alpha) / (n_d + K doc_alpha), (chains, H, K)."""
    chains, K, _ = pi.shape
    H = held.observed.shape[0]
    like = pi.transpose(0, 2, 1)[:, held.observed].reshape(chains * H, -1, K)
    valid = np.broadcast_to(held.observed_valid, (chains,) + held.observed_valid.shape).reshape(chains * H, -1)
    _, ndk = gibbs_assignments(like, valid, doc_alpha, sweeps, burn, rng)
    props = (ndk + doc_alpha) / (ndk.sum(2, keepdims=True) + K * doc_alpha)
    return props.mean(0).reshape(chains, H, K)


def completion_probabilities(pi, props, held: HeldOut) -> np.ndarray:
    """Each chain's predictive probability sum_k props_dk pi_kx of each scored token, (chains, tokens)."""
    like = pi.transpose(0, 2, 1)[:, held.scored]                    # (chains, H, L2, K)
    return np.einsum("chlk,chk->chl", like, props)[:, held.scored_valid]


def perplexity_of(p) -> np.ndarray:
    """exp(-mean log p) over the last axis: predictive probabilities of the scored tokens -> perplexity."""
    return np.exp(-np.log(p).mean(-1))


# ----------------------------------------------------------------------------------
# the target
# ----------------------------------------------------------------------------------
@dataclass
class LDAPotential(SimplexPotential):
    """theta (K W) > 0 viewed as the topics pi (each row normalised). U is that of the prior alone: the
    posterior's needs the assignments summed out, so only minibatch samplers (which draw them) run on it."""
    topics: int = 1
    heldout: HeldOut | None = None
    truth: np.ndarray | None = field(default=None, repr=False)    # the generating topics, where known

    def theta_view(self, theta: np.ndarray) -> np.ndarray:
        return topic_words(theta, self.topics).reshape(theta.shape)

    def predictive(self, theta, seed: int = 0) -> np.ndarray:
        """Each chain's predictive probabilities of the held-out documents' scored tokens (chains, tokens),
        by document completion; seeded, so the same states score the same."""
        return self.topics_predictive(topic_words(theta, self.topics), seed)

    def topics_predictive(self, pi, seed: int = 0) -> np.ndarray:
        """`predictive` of topics pi (chains, K, W) given directly (a Gibbs baseline's, the true ones)."""
        props = completion_proportions(pi, self.heldout, self.data.doc_alpha, np.random.default_rng(seed))
        return completion_probabilities(pi, props, self.heldout)

    def perplexity(self, theta, seed: int = 0) -> float:
        """Held-out perplexity of the chains' averaged predictive: the posterior predictive estimated from
        the chains' current states (one draw each)."""
        return float(perplexity_of(self.predictive(theta, seed).mean(0)))

    @cached_property
    def typical_scale(self) -> float:
        """The size of theta_kw where it holds a word: tokens per topic and word, beta + T / (K W)."""
        return self.data.beta + len(self.data.corpus.words) / self.dim

    def random_start(self, chains: int, rng) -> np.ndarray:
        """Starting states: theta_kw ~ typical_scale Gamma(1, 1), topics random and dense."""
        return self.typical_scale * rng.gamma(1.0, 1.0, size=(chains, self.dim))


def _no_exact_gradient(theta):
    raise PotentialError("LDA has no exact gradient (it needs every document's topic assignments summed out): "
                         "run it with minibatches of documents (--batch n)")


def lda_potential(train: Corpus, held: Corpus, topics: int, beta: float, doc_alpha: float, name: str,
                  description: str, truth=None, seed: int = 0, form: str = "gamma") -> LDAPotential:
    if form not in ("gamma", "pi"):
        raise PotentialError(f"LDA's likelihood form is 'gamma' or 'pi', got '{form}'")
    data = LDAData(train, topics, beta, doc_alpha, form=form)
    dim = data.d

    def U(theta):
        return data.prior_U(theta)

    pot = LDAPotential(
        name, dim, U, _no_exact_gradient, ((0.0, 1.0), (0.0, 1.0)), description=description,
        formula=r"\theta_{kw} \mid z \sim \mathrm{Gamma}(\beta + n_{kw}, 1),\ "
                r"\pi_k = \theta_k / \textstyle\sum_w \theta_{kw}",
        known_u_min=0.0, known_log_z=float(dim * special.gammaln(beta)), data=data,
        shape=np.full(dim, beta), simplex=True, topics=topics, heldout=HeldOut.from_corpus(held), truth=truth)
    pot.start = pot.random_start(1, np.random.default_rng(30_000 + seed))[0]
    return pot


# ----------------------------------------------------------------------------------
# the named set-ups
# ----------------------------------------------------------------------------------
# (documents, topics, vocabulary, mean length, held-out documents)
SYNTHETIC_SIZES = {
    "quick": (600, 10, 200, 40, 30),
    "default": (2000, 20, 500, 50, 50),
    "full": (10_000, 50, 2000, 80, 200),
    "live": (10_000, 50, 1000, 40, 20),
}
SYNTHETIC_BETA, SYNTHETIC_DOC_ALPHA = 0.01, 0.1       # the samplers' priors (the generating topics are Dir(0.05))
REUTERS_TOPICS, REUTERS_HELDOUT = 50, 45
REUTERS_BETA, REUTERS_DOC_ALPHA = 0.01, 0.1


def synthetic_lda(size: str = "default", seed: int = 0, held_out: int | None = None,
                  form: str = "gamma", beta: float = SYNTHETIC_BETA,
                  doc_alpha: float = SYNTHETIC_DOC_ALPHA) -> LDAPotential:
    """beta, doc_alpha: the model's priors on the topics' theta and on the documents (not the generating ones)."""
    if size not in SYNTHETIC_SIZES:
        raise PotentialError(f"synthetic LDA sizes: {', '.join(SYNTHETIC_SIZES)}; got '{size}'")
    D, K, W, length, H = SYNTHETIC_SIZES[size]
    H = H if held_out is None else held_out
    corpus, pi = synthetic_corpus(D + H, K, W, length, seed)
    train, held = split_heldout(corpus, H, seed)
    return lda_potential(
        train, held, K, beta, doc_alpha, f"lda-synthetic-{size}",
        f"LDA on a synthetic corpus drawn from the model: {train.n} training and {held.n} held-out documents, "
        f"K = {K} topics over W = {W} words (true topics ~ Dir(0.05), sparse), mean length {length}; "
        f"prior beta = {beta:g}, documents Dir({doc_alpha:g}); d = {K * W}"
        + ("; gradient of the likelihood of pi (Eq. S.29)" if form == "pi" else ""),
        truth=pi, seed=seed, form=form)


def reuters_lda(topics: int = REUTERS_TOPICS, seed: int = 0, held_out: int = REUTERS_HELDOUT) -> LDAPotential:
    train, held = split_heldout(reuters_corpus(), held_out, seed)
    return lda_potential(
        train, held, topics, REUTERS_BETA, REUTERS_DOC_ALPHA, "lda-reuters",
        f"LDA on the Reuters sample of the lda package: {train.n} training and {held.n} held-out documents, "
        f"K = {topics} topics over W = {train.vocabulary} words; prior beta = {REUTERS_BETA:g}, documents "
        f"Dir({REUTERS_DOC_ALPHA:g}); d = {topics * train.vocabulary}", seed=seed)


def uci_prefix(text: str, **kwargs) -> LDAPotential:
    """`lda-uci:PATH` (a docword file), optionally `lda-uci:PATH;K=<topics>`."""
    path, _, opts = text.partition(";")
    topics = 20
    if opts:
        key, _, value = opts.partition("=")
        if key.strip() != "K" or not value.strip().isdigit() or int(value) < 2:
            raise PotentialError(f"lda-uci: the only option is ;K=<topics, at least 2>, got ';{opts}'")
        topics = int(value)
    return uci_lda(path.strip(), topics)


def uci_lda(path, topics: int = 20, held_out: int | None = None, seed: int = 0,
            beta: float = REUTERS_BETA, doc_alpha: float = REUTERS_DOC_ALPHA) -> LDAPotential:
    corpus = uci_corpus(path)
    H = max(1, corpus.n // 10) if held_out is None else held_out
    train, held = split_heldout(corpus, H, seed)
    return lda_potential(
        train, held, topics, beta, doc_alpha, f"lda-uci:{path}",
        f"LDA on {path}: {train.n} training and {held.n} held-out documents, K = {topics} topics over "
        f"W = {train.vocabulary} words; d = {topics * train.vocabulary}", seed=seed)


# ----------------------------------------------------------------------------------
# the Models page's entries (samplers/targets/live.py): held-out perplexity of the chains' averaged predictive
# ----------------------------------------------------------------------------------
LIVE_BATCH, LIVE_CHAINS = 50, 3
LIVE_PARAMS = {"sgrld-simplex": dict(eps=0.1, eps_b=30.0, eps_c=0.6),
               "sgrhmc-simplex": dict(eps=0.3, integrator="splitting"),
               "scir": dict(h=0.1, eps_b=30.0, eps_c=0.6)}


def _live(key, title, pot, pair, description) -> LiveModel:
    return LiveModel(key, title, pot, pot.perplexity, "held-out perplexity", True, pair,
                     params={k: LIVE_PARAMS[k] for k in pair}, batch=LIVE_BATCH, chains=LIVE_CHAINS,
                     init=pot.random_start, description=description)


def synthetic_live(seed: int = 0, size: str = "default") -> LiveModel:
    pot = synthetic_lda("live" if size == "default" else size, seed)
    return _live("lda-synthetic", LIVE_TITLES["lda-synthetic"], pot, ("sgrld-simplex", "sgrhmc-simplex"),
                 pot.description + ". SGRLD (Patterson & Teh, decreasing steps) against gSGRHMC "
                 "(recipe paper §4.2), minibatches of 50 documents")


def reuters_live(seed: int = 0, size: str = "default") -> LiveModel:
    pot = reuters_lda(seed=seed, held_out=REUTERS_HELDOUT if size == "default" else 10)
    return _live("lda-reuters", LIVE_TITLES["lda-reuters"], pot, ("sgrld-simplex", "scir"),
                 pot.description + ". SGRLD against SCIR (SCIR paper §4.1), minibatches of 50 documents")


LIVE_TITLES = {"lda-synthetic": "LDA, synthetic corpus (10⁴ documents, K = 50)",
               "lda-reuters": "LDA, Reuters sample (lda package, K = 50)"}
# live.py imports no model module (that would be an import cycle): each registers itself when imported, and the
# presets import this one (its lda-uci: prefix)
LIVE_MODELS["lda-synthetic"] = (LIVE_TITLES["lda-synthetic"], synthetic_live)
LIVE_MODELS["lda-reuters"] = (LIVE_TITLES["lda-reuters"], reuters_live)
