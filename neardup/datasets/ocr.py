"""A labelled set whose copies carry real OCR noise: rendered pages read back by Tesseract.

The other multilingual sets (:mod:`neardup.datasets.independent`) get their character
noise from augmenters that imitate OCR. Here each copy is typeset onto a page image with
Pillow (font, size, column width, rotation, blur, speckle, JPEG compression and scan
resolution drawn per copy, like old newsprint scans) and read back by the ``tesseract``
command-line program with that language's trained data. Some copies are also edited as
newspapers reprint wire copy: the tail cut (abridged), the lead sentence dropped, or the
first sentence replaced.

Source documents: chunks of Debian's translated man pages for pl, nl, de, cs and fr (as in
multi-latin, plus Dutch) and es, Reuters-21578 stories for en (English man pages when
Reuters is absent), and for bg (no Debian man pages) the Bulgarian translations of
program messages in the installed gettext catalogs (``/usr/share/locale/bg/LC_MESSAGES``:
coreutils, bash, apt, git, glib, systemd, ...), one catalog a "page". Other chunks of the
same page (stories of the same topic) and *updates* (a chunk's second half replaced by
another chunk's of the same page) are the near-miss negatives. es and bg were added after
data/multi-ocr was built: they are only built when asked for
(:data:`DEFAULT_OCR_LANGUAGES` are the six it holds).

Every random choice comes from ``seed``; the text Tesseract returns depends on its
version and trained data too (recorded in ``info.json``). OCR output is cached by a hash of
the image, language and Tesseract version, so a rebuild only pays for new images.
Tesseract runs one process at a time, under ``nice`` and with ``OMP_THREAD_LIMIT=1``.
"""

from __future__ import annotations

import gettext
import hashlib
import io
import os
import re
import shutil
import subprocess
import textwrap
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from neardup.datasets.independent import (
    MULTILINGUAL_SOURCES,
    man_documents,
    paragraph_chunks,
    script_sentences,
)
from neardup.errors import check_choice, check_int

__all__ = ["DEFAULT_OCR_LANGUAGES", "OCR_LANGUAGES", "OcrEngine", "make_ocr_set", "render_page",
           "reprint_edit"]

#: Language -> Tesseract trained-data name.
OCR_LANGUAGES = {"pl": "pol", "nl": "nld", "de": "deu", "cs": "ces", "fr": "fra", "en": "eng",
                 "es": "spa", "bg": "bul"}
#: The languages built when none are given, in data/multi-ocr's order: a language's random
#: stream is its position in ``languages``, so this order (and these six) must stay for
#: data/multi-ocr to rebuild the same. es and bg are only built when asked for.
DEFAULT_OCR_LANGUAGES = ("pl", "nl", "de", "cs", "fr", "en")
SOURCES = {
    **{lang: MULTILINGUAL_SOURCES[lang] for lang in ("pl", "de", "cs", "fr")},
    "nl": "Debian manpages-nl 4.18.1 (manpages-l10n; translations GPL-3+)",
    "en": "Reuters-21578, Distribution 1.0 (free for research use; see its README.txt); "
          "English man pages when absent",
    "es": "Debian manpages-es 4.18.1 (manpages-l10n; translations GPL-3+)",
    "bg": "Bulgarian gettext catalogs of the installed Debian packages "
          "(/usr/share/locale/bg/LC_MESSAGES/*.mo: coreutils, bash, apt, git, glib, gtk, systemd, "
          "...; translated program messages, each package's licence, mostly GPL/LGPL)",
}
# Codes in the per-split random streams. "train" was added after validation and test were
# built: its pages are drawn, from a stream of their own, only among the pages validation
# and test leave, so adding it changes neither of them (same seed and stories).
_OCR_SPLIT_CODE = {"validation": 0, "test": 1, "train": 2}
# Frequent function words: a man page paragraph counts as translated when more of its
# words are the language's than English's (Dutch has too few diacritics for the
# diacritics test multi-latin uses).
_FUNCTION_WORDS = {
    "en": "the and of to is a in that for it with as are be this by or not an on from",
    "nl": "de het een van en is in dat voor met op niet wordt als zijn of door aan te bij",
    "de": "der die das und ist ein eine nicht mit von zu den für auf wird im dem des oder",
    "fr": "le la les et est un une des du de pour dans que qui pas sur par ou avec",
    "pl": "i w nie się na jest z do że to jak lub przez dla jeśli oraz być od po",
    "cs": "a v je se na že s z do pro jako nebo není být při od k to jsou",
    "es": "el la los las de del y en que es un una para por con no se o al lo su como",
}
_FONTS = ("dejavu/DejaVuSerif.ttf", "dejavu/DejaVuSerifCondensed.ttf", "dejavu/DejaVuSans.ttf",
          "dejavu/DejaVuSansCondensed.ttf", "liberation/LiberationSerif-Regular.ttf",
          "liberation/LiberationSans-Regular.ttf", "liberation/LiberationSansNarrow-Regular.ttf")
_FONT_ROOT = Path("/usr/share/fonts/truetype")
# Chunk length in words (lo, hi): Debian translates few Czech pages, shorter chunks give
# more of them.
_CHUNK_WORDS = {"cs": (25, 80)}


# --------------------------------------------------------------------------------------
# Source documents
# --------------------------------------------------------------------------------------


def _translated(language: str) -> Callable[[str], bool]:
    ours = set(_FUNCTION_WORDS[language].split())
    english = set(_FUNCTION_WORDS["en"].split())

    def keep(paragraph: str) -> bool:
        if "\\" in paragraph:  # roff escapes left (accents as \('e): not clean text
            return False
        words = re.findall(r"\w+", paragraph.lower())
        hits = sum(w in ours for w in words)
        return hits >= 2 and hits > sum(w in english for w in words)

    return keep


def _reuters_documents(lo: int, hi: int) -> list[dict]:
    """Reuters stories that are neither re-sent nor templates (each its own family), cut
    to whole sentences of at most ``hi`` words; "page" is the story's first topic, so
    same-topic stories are the near-miss negatives."""
    from neardup.datasets.stories import find_story_groups, prepare_stories
    from neardup.io import ReaderConfig, find_reuters_dir, iter_records

    root = find_reuters_dir()
    if root is None:
        return []
    records = iter_records(sorted(root.glob("reut2-*.sgm")), ReaderConfig())
    stories, _ = prepare_stories(records, min_words=lo)
    family = find_story_groups(stories).family
    alone = np.bincount(family)[family] == 1
    docs = []
    for story, single in zip(stories, alone.tolist()):
        if not single or not story.topics:
            continue
        kept, words = [], 0
        for sentence in script_sentences(story.body, False):
            words += len(sentence.split())
            if words > hi:
                break
            kept.append(sentence)
        text = " ".join(" ".join(kept).split())  # Reuters wraps lines at 70 characters
        if len(text.split()) >= lo:
            docs.append({"page": f"en:{story.topics[0]}", "lang": "en", "text": text,
                         "source": f"reuters-{story.id}"})
    return docs


# A message with any of these is not prose: format directives (%s, %1$s), shell and
# markup characters, paths, option names (-a, --all), URLs, abbreviations and names with
# inner dots (e.g., file.txt), aligned columns (two spaces, tabs).
_NOT_PROSE = re.compile(r"[%$\\{}<>|=@`_/*#~^\[\]]|https?:|(?<!\w)--?\w|\w\.\w|\s{2}|\t")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")


def _prose_message(message: str) -> str | None:
    """A translated program message as one sentence or more of prose, or None: at least 8
    words, none of :data:`_NOT_PROSE`, at least 90% of its letters Cyrillic; line breaks
    joined, a full stop added when it has no final punctuation."""
    if _NOT_PROSE.search(message):
        return None
    text = " ".join(message.split())
    letters = sum(c.isalpha() for c in text)
    if len(text.split()) < 8 or len(_CYRILLIC.findall(text)) < 0.9 * letters:
        return None
    return text if text[-1] in ".!?" else text.rstrip(":;,") + "."


def _catalog_documents(language: str, locale_root: Path, lo: int, hi: int) -> list[dict]:
    """Chunks of a language's translated program messages (gettext catalogs), as
    :func:`~neardup.datasets.independent.man_documents` chunks man pages: each catalog's
    prose messages (:func:`_prose_message`, in the catalog's order, that is by English
    message id) are its "paragraphs", grouped into chunks of ``lo``-``hi`` words; a message
    in more than one catalog is dropped, and the versions of one package (gtk20 and gtk30,
    gtk20-properties and gtk30-properties) are one page, so that their near-identical
    messages are not two stories of different pages."""
    page_messages: dict[str, dict[str, None]] = {}  # each page's messages, in order, once
    for path in sorted((locale_root / language / "LC_MESSAGES").glob("*.mo")):
        try:
            with open(path, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
        except (OSError, UnicodeDecodeError, ValueError):  # not a readable catalog
            continue
        # One page per package: gtk20, gtk30 -> gtk; gstreamer-1.0 -> gstreamer.
        page = re.sub(r"[-_]?\d[\d.]*", "", path.stem)
        messages = page_messages.setdefault(f"{language}:{page}", {})
        for key, value in catalog.items():
            if isinstance(key, str) and key and isinstance(value, str):
                text = _prose_message(value)
                if text is not None:
                    messages.setdefault(text)
    on_pages = Counter(m for messages in page_messages.values() for m in messages)
    docs = []
    for page, messages in page_messages.items():
        own = [m for m in messages if on_pages[m] == 1]
        docs += [{"page": page, "lang": language, "text": text}
                 for text in paragraph_chunks(own, False, lo, hi)]
    return docs


def source_documents(language: str, man_root: Path,
                     locale_root: Path = Path("/usr/share/locale")) -> list[dict]:
    """The source chunks of one language: ``{"page", "lang", "text", "source"}``."""
    lo, hi = _CHUNK_WORDS.get(language, (40, 120))
    if language == "bg":
        docs = _catalog_documents(language, Path(locale_root), lo, hi)
        for i, d in enumerate(docs):
            d["source"] = f"{language}-mo-{i}"
        return docs
    if language == "en":
        docs = _reuters_documents(lo, hi)
        if docs:
            return docs
        root, keep = man_root, _translated("en")
        docs, _ = man_documents("", root, lo, hi, keep=keep)
        for d in docs:
            d["page"], d["lang"] = "en:" + d["page"].split(":", 1)[1], "en"
    else:
        docs, _ = man_documents(language, man_root, lo, hi, keep=_translated(language))
    for i, d in enumerate(docs):
        d["source"] = f"{language}-man-{i}"
    return docs


# --------------------------------------------------------------------------------------
# Reprint edits, page rendering, OCR
# --------------------------------------------------------------------------------------


def _words(sentences: Sequence[str]) -> int:
    return sum(len(x.split()) for x in sentences)


def reprint_edit(text: str, rng: np.random.Generator,
                 other_sentences: Sequence[str]) -> tuple[str, list[str]]:
    """A newspaper's edit of a wire text, or none: the tail dropped (abridged, 20-50% of
    the words, at a sentence end), the lead sentence dropped, or the first sentence
    replaced by the first words of ``other_sentences``' pick. An edit that would take more
    than half the words (a man page "sentence" can be a whole paragraph) is not made:
    two copies must still share text to be copies."""
    sentences = script_sentences(text, False)
    draw, share = rng.random(), float(rng.uniform(0.2, 0.5))
    pick = int(rng.integers(max(1, len(other_sentences))))
    total = _words(sentences)
    if len(sentences) < 3:
        return text, []
    lead = len(sentences[0].split())
    if draw < 0.25:
        ends = np.cumsum([len(x.split()) for x in sentences])
        keep = int(np.searchsorted(ends, total * (1 - share))) + 1
        if keep < len(sentences) and ends[keep - 1] >= total / 2:
            return " ".join(sentences[:keep]), [f"abridge({len(sentences) - keep})"]
    elif draw < 0.40 and lead <= total / 3:
        return " ".join(sentences[1:]), ["drop_lead"]
    elif draw < 0.55 and other_sentences and lead <= total / 3:
        first = " ".join(other_sentences[pick].split()[:lead])
        return " ".join([first, *sentences[1:]]), ["change_first_line"]
    return text, []


@dataclass(frozen=True)
class PageStyle:
    """How one copy is typeset and scanned."""

    font: str
    size: int          # font size in pixels on the scan
    width: int         # column width in characters
    rotation: float    # degrees
    scale: float       # scan resolution relative to print (typeset at size / scale)
    blur: float        # Gaussian blur radius (pixels, after scaling)
    speckle: float     # share of pixels flipped to ink or paper
    jpeg: int          # JPEG quality

    @classmethod
    def draw(cls, rng: np.random.Generator) -> PageStyle:
        fonts = [f for f in _FONTS if (_FONT_ROOT / f).exists()]
        return cls(font=fonts[int(rng.integers(len(fonts)))],
                   size=int(rng.integers(13, 27)), width=int(rng.integers(28, 62)),
                   rotation=round(float(rng.uniform(-1.5, 1.5)), 2),
                   scale=round(float(rng.uniform(0.45, 0.9)), 2),
                   blur=round(float(rng.uniform(0.0, 1.0)), 2),
                   speckle=round(float(rng.uniform(0.0, 0.02)), 3),
                   jpeg=int(rng.integers(15, 70)))

    def note(self) -> str:
        name = Path(self.font).stem
        return (f"page(font={name},size={self.size},width={self.width},rot={self.rotation},"
                f"scale={self.scale},blur={self.blur},speckle={self.speckle},jpeg={self.jpeg})")


def render_page(text: str, style: PageStyle, rng: np.random.Generator) -> bytes:
    """``text`` typeset in one column and "scanned": PNG bytes of a grayscale page."""
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    print_size = int(round(style.size / style.scale))
    font = ImageFont.truetype(str(_FONT_ROOT / style.font), print_size)
    lines = [line for paragraph in text.split("\n")
             for line in (textwrap.wrap(paragraph, style.width) or [""])]
    line_height = int(print_size * 1.25)
    width = int(max(font.getlength(line) for line in lines)) + 2 * print_size
    height = line_height * len(lines) + 2 * print_size
    paper, ink = int(rng.integers(205, 250)), int(rng.integers(0, 70))
    page = Image.new("L", (width, height), paper)
    draw = ImageDraw.Draw(page)
    for k, line in enumerate(lines):
        draw.text((print_size, print_size + k * line_height), line, fill=ink, font=font)
    page = page.rotate(style.rotation, resample=Image.BICUBIC, expand=True, fillcolor=paper)
    page = page.resize((max(1, int(page.width * style.scale)),
                        max(1, int(page.height * style.scale))), Image.BILINEAR)
    if style.blur:
        page = page.filter(ImageFilter.GaussianBlur(style.blur))
    pixels = np.asarray(page, dtype=np.int16).copy()
    flips = rng.random(pixels.shape) < style.speckle
    pixels[flips] = np.where(rng.random(int(flips.sum())) < 0.5, ink, paper)
    pixels += rng.normal(0, 8, pixels.shape).astype(np.int16)
    page = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "L")
    scanned = io.BytesIO()
    page.save(scanned, "JPEG", quality=style.jpeg)
    out = io.BytesIO()
    Image.open(io.BytesIO(scanned.getvalue())).save(out, "PNG")
    return out.getvalue()


class OcrEngine:
    """The ``tesseract`` program, one process at a time, with an on-disk cache of its
    output keyed by image, language and version.

    Raises
    ------
    RuntimeError
        When ``tesseract`` or a needed language's trained data is missing.
    """

    def __init__(self, cache_dir: str | os.PathLike | None = None, binary: str = "tesseract"):
        found = shutil.which(binary)
        if found is None:
            raise RuntimeError("OcrEngine: the tesseract program was not found on PATH; "
                               "install it (apt-get install tesseract-ocr tesseract-ocr-pol ...)")
        self.binary = found
        self.version = _tesseract_version(found)
        self.languages = _tesseract_languages(found)
        default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "neardup" / "ocr"
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default
        self.calls = self.cached = 0

    def check_language(self, language: str) -> None:
        if OCR_LANGUAGES[language] not in self.languages:
            raise RuntimeError(
                f"OcrEngine: no Tesseract data for {language!r} ({OCR_LANGUAGES[language]}); "
                f"install tesseract-ocr-{OCR_LANGUAGES[language]}")

    def read(self, png: bytes, language: str) -> str:
        tess = OCR_LANGUAGES[language]
        key = hashlib.sha256(png + f"|{tess}|{self.version}".encode()).hexdigest()
        path = self.cache_dir / key[:2] / f"{key}.txt"
        if path.exists():
            self.cached += 1
            return path.read_text(encoding="utf-8")
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        # psm 4: one column of text of variable sizes, as a newspaper column is.
        done = subprocess.run(["nice", "-n", "10", self.binary, "stdin", "stdout", "-l", tess,
                               "--psm", "4"], input=png, capture_output=True, env=env,
                              check=True)
        text = done.stdout.decode("utf-8").strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        self.calls += 1
        return text


@lru_cache(maxsize=4)
def _tesseract_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0].strip() if out else "unknown"


@lru_cache(maxsize=4)
def _tesseract_languages(binary: str) -> frozenset[str]:
    out = subprocess.run([binary, "--list-langs"], capture_output=True, text=True).stdout
    return frozenset(line.strip() for line in out.splitlines()[1:])


# --------------------------------------------------------------------------------------
# The set
# --------------------------------------------------------------------------------------


def _split_pages(docs: list[dict], rng: np.random.Generator, stories: int,
                 train_rng: np.random.Generator | None = None,
                 train_stories: int = 0) -> dict[str, list[int]]:
    """Whole pages (topics) to validation, then test, up to ``stories`` chunks each
    (half the language's chunks each when it has fewer). With ``train_rng``, then up to
    ``train_stories`` chunks for train, from whole pages neither validation nor test
    touched (not even a sample of a big topic), drawn from ``train_rng`` alone: ``rng`` is
    used exactly as without train."""
    pages: dict[str, list[int]] = {}
    for i, d in enumerate(docs):
        pages.setdefault(d["page"], []).append(i)
    order = [list(pages)[k] for k in rng.permutation(len(pages)).tolist()]
    want = min(stories, len(docs) // 2)
    chosen: dict[str, list[int]] = {"validation": [], "test": []}
    for page in order:
        for split in ("validation", "test"):
            if len(chosen[split]) < want:
                members = pages[page]
                if len(members) > want:  # a big topic (Reuters "earn"): a sample of it
                    picks = np.sort(rng.choice(len(members), size=want // 4, replace=False))
                    members = [members[k] for k in picks.tolist()]
                chosen[split] += members
                break
    if train_rng is not None:
        used = {docs[i]["page"] for split in ("validation", "test") for i in chosen[split]}
        left = [page for page in pages if page not in used]
        chosen["train"] = []
        for k in train_rng.permutation(len(left)).tolist():
            if len(chosen["train"]) >= train_stories:
                break
            members = pages[left[k]]
            if len(members) > train_stories:  # a big topic: a sample of it, as above
                size = max(1, train_stories // 4)
                picks = np.sort(train_rng.choice(len(members), size=size, replace=False))
                members = [members[j] for j in picks.tolist()]
            chosen["train"] += members
    return chosen


def _update(anchor: str, sibling: str) -> str | None:
    """``anchor``'s first half and ``sibling``'s second half (sentences)."""
    mine, theirs = script_sentences(anchor, False), script_sentences(sibling, False)
    if len(mine) < 2 or len(theirs) < 2:
        return None
    return " ".join(mine[: len(mine) // 2] + theirs[len(theirs) // 2:])


def _language_clusters(docs: list[dict], chosen: list[int], rng: np.random.Generator,
                       hard_negative_share: float) -> list[dict]:
    """Clusters of one split and language: each chosen chunk, plus updates."""
    clusters = [{"label": docs[i]["source"], "text": docs[i]["text"], "page": docs[i]["page"],
                 "source": docs[i]["source"], "kind": "reprint"} for i in chosen]
    by_page: dict[str, list[int]] = {}
    for k, c in enumerate(clusters):
        by_page.setdefault(c["page"], []).append(k)
    n_updates = int(round(hard_negative_share * len(clusters)))
    for k in rng.permutation(len(clusters))[:n_updates].tolist():
        anchor = clusters[k]
        siblings = [s for s in by_page[anchor["page"]] if s != k]
        if not siblings:
            continue
        body = _update(anchor["text"], clusters[siblings[int(rng.integers(len(siblings)))]]["text"])
        if body is not None:
            clusters.append({**anchor, "label": f"{anchor['label']}~update", "text": body,
                             "kind": "hard_negative:update", "negative_of": anchor["label"]})
    return clusters


def _scan(text: str, language: str, rng: np.random.Generator, engine: OcrEngine,
          tries: int = 3) -> tuple[str | None, PageStyle, int]:
    """OCR of ``text`` on a page drawn from ``rng``; a page whose reading keeps less than
    a quarter of the text's letters (too small, blurred or speckled for Tesseract) is
    scanned again with a new style, up to ``tries`` pages. Returns (text or None, the
    last style, pages scanned)."""
    letters = sum(c.isalpha() for c in text)
    for scan in range(1, tries + 1):
        style = PageStyle.draw(rng)
        ocr = engine.read(render_page(text, style, rng), language)
        if sum(c.isalpha() for c in ocr) >= letters / 4:
            return ocr, style, scan
    return None, style, tries


def _copy_weights(max_copies: int) -> np.ndarray:
    """Chance of 1..max_copies copies, falling with the count (a copy costs an OCR run)."""
    weights = 1.0 / np.arange(1, max_copies + 1) ** 0.7
    return weights / weights.sum()


def make_ocr_set(
    *,
    languages: Sequence[str] = DEFAULT_OCR_LANGUAGES,
    seed: int = 0,
    stories_per_language: int = 60,
    splits: Sequence[str] = ("validation", "test"),
    train_stories_per_language: int | None = None,
    hard_negative_share: float = 0.2,
    max_copies: int = 4,
    man_root: str | Path = "/usr/share/man",
    locale_root: str | Path = "/usr/share/locale",
    engine: OcrEngine | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A labelled set of OCR'd copies in ``languages`` (keys of :data:`OCR_LANGUAGES`).

    Each language's pages go whole to validation, then test, about
    ``stories_per_language`` source chunks per split (half the language's chunks when it
    has fewer: Debian's Czech pages give about 40). Each chunk (and each *update*, a share
    ``hard_negative_share`` of them) is a cluster of 1 to ``max_copies`` copies, every
    copy possibly edited as a reprint, then typeset, scanned and OCR'd in its language.
    Records use the multilingual sets' format (``lang`` field, ``date`` None). The default
    ``languages`` are data/multi-ocr's six (:data:`DEFAULT_OCR_LANGUAGES`); es (man pages)
    and bg (program messages under ``locale_root``) are built only when given.

    ``splits`` may include ``"train"``: about ``train_stories_per_language`` chunks
    (default ``stories_per_language``) per language from the pages validation and test
    leave (page-disjoint from both), drawn from random streams of its own, so validation
    and test stay as they are without it (give the ``stories_per_language`` they were
    built with). A language whose pages all went to validation and test gets none.
    ``progress(done, total)`` is called after each copy.

    Raises
    ------
    ValueError
        For an unknown language or split, or a language without source text.
    RuntimeError
        When Tesseract or a language's data is missing.
    """
    caller = "make_ocr_set"
    seed = check_int(caller, "seed", seed, low=0)
    stories_per_language = check_int(caller, "stories_per_language", stories_per_language, low=1)
    max_copies = check_int(caller, "max_copies", max_copies, low=1)
    train_stories = check_int(caller, "train_stories_per_language",
                              stories_per_language if train_stories_per_language is None
                              else train_stories_per_language, low=1)
    for language in languages:
        check_choice(caller, "languages", language, tuple(OCR_LANGUAGES))
    for split in splits:
        check_choice(caller, "splits", split, tuple(_OCR_SPLIT_CODE))
    engine = engine or OcrEngine()
    plans: dict[str, list[dict]] = {split: [] for split in splits}
    info: dict[str, Any] = {split: {"stories": {}, "updates": {}, "docs": {}} for split in splits}
    for li, language in enumerate(languages):
        engine.check_language(language)
        docs = source_documents(language, Path(man_root), Path(locale_root))
        if not docs:
            raise ValueError(f"{caller}: no {language} text found; install "
                             + SOURCES[language].split(" (")[0])
        rng = np.random.default_rng([seed, 31, li])
        # train's own stream: validation's and test's draws from rng stay as they were.
        train_rng = (np.random.default_rng([seed, 35, li]) if "train" in splits else None)
        chosen = _split_pages(docs, rng, stories_per_language, train_rng, train_stories)
        for split in splits:
            r = train_rng if split == "train" and train_rng is not None else rng
            clusters = _language_clusters(docs, chosen[split], r, hard_negative_share)
            for c in clusters:
                c["lang"] = language
                c["size"] = 1 + int(r.choice(max_copies, p=_copy_weights(max_copies)))
            plans[split] += clusters
            info[split]["stories"][language] = len(chosen[split])
            info[split]["updates"][language] = sum(c["kind"] != "reprint" for c in clusters)
            info[split]["docs"][language] = sum(c["size"] for c in clusters)
    total = sum(c["size"] for clusters in plans.values() for c in clusters)
    done = lost = 0
    records: list[dict[str, Any]] = []
    for split in splits:
        out = []
        for ci, cluster in enumerate(plans[split]):
            # Sentences of other pages of the language, for a changed first line.
            crng = np.random.default_rng([seed, 32, _OCR_SPLIT_CODE[split], ci])
            others = [c for c in plans[split]
                      if c["lang"] == cluster["lang"] and c["page"] != cluster["page"]]
            other = others[int(crng.integers(len(others)))]["text"] if others else ""
            for j in range(cluster["size"]):
                rng = np.random.default_rng([seed, 33, _OCR_SPLIT_CODE[split], ci, j])
                text, notes = reprint_edit(cluster["text"], rng, script_sentences(other, False)[:3])
                ocr, style, scans = _scan(text, cluster["lang"], rng, engine)
                if ocr is None:  # unreadable at every try: the copy is lost, as in an archive
                    lost += 1
                    continue
                if scans > 1:
                    notes.append(f"rescans({scans - 1})")
                record = {"split": split, "cluster": cluster["label"], "kind": cluster["kind"],
                          "date": None, "lang": cluster["lang"], "source": cluster["source"]}
                if "negative_of" in cluster:
                    record["negative_of"] = cluster["negative_of"]
                record["noise"] = [*notes, style.note(), f"tesseract({OCR_LANGUAGES[cluster['lang']]})"]
                record["text"] = ocr
                out.append(record)
                done += 1
                if progress is not None:
                    progress(done, total)
        order = np.random.default_rng([seed, 34, _OCR_SPLIT_CODE[split]]).permutation(len(out))
        records.extend({"id": f"{split}-{k:06d}", **out[i]} for k, i in enumerate(order.tolist()))
    import PIL

    meta = {"set": "ocr", "seed": seed, "sources": {lang: SOURCES[lang] for lang in languages},
            "ocr": {"tesseract": engine.version, "pillow": PIL.__version__,
                    "traineddata": {lang: OCR_LANGUAGES[lang] for lang in languages},
                    "fonts": [f for f in _FONTS if (_FONT_ROOT / f).exists()]},
            "splits": info, "unreadable_copies_dropped": lost}
    return records, meta
