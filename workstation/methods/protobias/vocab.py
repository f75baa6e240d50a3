"""The built-in ProtoBias vocabulary: what the templates are filled with, per domain.

Taken from the seed's taxonomy (§3.2 and Appendix A.1) where it names entries, completed by us
where it only gives examples. Every entry the seed does not name is marked "ours" below.

* **Animals** — 20 non-prototypical → prototypical pairs in three subcategories. Birds (hypernym
  "bird"): penguin, ostrich, kiwi, shoebill, cassowary, flamingo, pelican, toucan against robin
  or sparrow. Mammals ("mammal"): platypus, echidna, bat, pangolin, armadillo, dolphin against
  dog, cat or horse. Other animals ("animal"): mosquito, cockroach, walking stick insect,
  praying mantis, jellyfish, octopus against common mammals. Which prototype each one is paired
  with is ours (the seed says "robin or sparrow", "dog, cat, or horse"). Extra elements are
  natural (rock, tree, pond in the seed; the rest ours), environments neutral and natural.
* **Objects** — 18 pairs, 6 per subcategory (furniture, vehicle, tableware). The seed names
  five furniture pairs (bean bag, hammock, futon mattress, chaise lounge, floor cushion against
  chair, bed, sofa or dining chair), five vehicle pairs (e-scooter, unicycle, tuk-tuk, golf cart,
  segway against motorcycle, bicycle or car) and one tableware pair (chopsticks → fork); the
  sixth furniture and vehicle pairs and five tableware pairs are ours. Extra elements are
  supporting objects (lamp, plate, cone in the seed; the rest ours).
* **Demography** — hypernym "person"; three social axes with the seed's advantaged and
  disadvantaged groups (religion: Christian vs Muslim, Jewish; nationality: American vs
  Nigerian, Indian, Mexican; sexual orientation: heterosexual vs LGBTQ+), five socio-attributes
  with a positive and a negative token each (rich/poor and intelligent/uneducated from the seed;
  the other tokens ours). The visual description of each group (clothing or a symbol, as the
  seed asks) is ours: a neutral, respectful cue a generator can draw, never a stereotype of the
  attribute. Extra elements are everyday objects (books, laptops, chalkboard in the seed).

Colours of an extra element are the ones it plausibly has (the seed: "switch to another natural
color"), so the adversarial colour is always a natural alternative.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

DOMAINS: tuple[str, ...] = ("animals", "objects", "demography")
DOMAIN_TITLES: dict[str, str] = {"animals": "Animals", "objects": "Objects", "demography": "Demography"}

#: the knobs of each domain, as the seed's templates list them (Tables 3-5)
DOMAIN_KNOBS: dict[str, tuple[str, ...]] = {
    "animals": ("count", "color", "layout_relation", "spatial"),
    "objects": ("count", "color_tone", "layout_relation", "spatial", "scale_size"),
    "demography": ("count", "color_tone", "layout_relation", "spatial"),
}
#: every knob name (the seed calls the colour knob "color" for animals, "color_tone" otherwise)
KNOBS: tuple[str, ...] = ("count", "color", "color_tone", "layout_relation", "spatial", "scale_size")


@dataclass(frozen=True)
class Pair:
    """One non-prototypical → prototypical main entity pair (animals, objects)."""

    subcategory: str
    hypernym: str  # noun phrase without article: "bird", "piece of furniture"
    non_proto: str
    proto: str
    verb: str  # what the main entity does, same in all three sentences: "stands", "is parked"
    scenes: str  # key into ENVIRONMENTS


@dataclass(frozen=True)
class Extra:
    """An extra element that carries the knob: singular and plural noun, plausible colours."""

    singular: str
    plural: str
    colors: tuple[str, ...]


@dataclass(frozen=True)
class Group:
    """A demographic group: its key and how it is shown (replaces "person" in a sentence)."""

    key: str
    desc: str  # "Nigerian person in a colorful agbada"


ANIMAL_PAIRS: tuple[Pair, ...] = (
    # birds (seed: penguin, ostrich, kiwi, shoebill, cassowary, flamingo, pelican, toucan vs robin/sparrow)
    Pair("bird", "bird", "penguin", "robin", "stands", "land"),
    Pair("bird", "bird", "ostrich", "sparrow", "stands", "land"),
    Pair("bird", "bird", "kiwi", "robin", "stands", "land"),
    Pair("bird", "bird", "shoebill", "sparrow", "stands", "land"),
    Pair("bird", "bird", "cassowary", "robin", "stands", "land"),
    Pair("bird", "bird", "flamingo", "sparrow", "stands", "land"),
    Pair("bird", "bird", "pelican", "robin", "stands", "land"),
    Pair("bird", "bird", "toucan", "sparrow", "stands", "land"),
    # mammals (seed: platypus, echidna, bat, pangolin, armadillo, dolphin vs dog/cat/horse)
    Pair("mammal", "mammal", "platypus", "dog", "rests", "land"),
    Pair("mammal", "mammal", "echidna", "cat", "rests", "land"),
    Pair("mammal", "mammal", "bat", "dog", "rests", "land"),
    Pair("mammal", "mammal", "pangolin", "cat", "rests", "land"),
    Pair("mammal", "mammal", "armadillo", "dog", "rests", "land"),
    Pair("mammal", "mammal", "dolphin", "horse", "is", "shore"),
    # other animals (seed: mosquito, cockroach, walking stick insect, praying mantis, jellyfish,
    # octopus vs common mammals)
    Pair("other", "animal", "mosquito", "dog", "rests", "land"),
    Pair("other", "animal", "cockroach", "cat", "rests", "land"),
    Pair("other", "animal", "walking stick insect", "dog", "rests", "land"),
    Pair("other", "animal", "praying mantis", "cat", "rests", "land"),
    Pair("other", "animal", "jellyfish", "horse", "is", "shore"),
    Pair("other", "animal", "octopus", "dog", "is", "shore"),
)

OBJECT_PAIRS: tuple[Pair, ...] = (
    # furniture (seed: bean bag, hammock, futon mattress, chaise lounge, floor cushion vs
    # chair, bed, sofa, dining chair); the pouf pair is ours
    Pair("furniture", "piece of furniture", "bean bag", "chair", "stands", "room"),
    Pair("furniture", "piece of furniture", "hammock", "bed", "stands", "room"),
    Pair("furniture", "piece of furniture", "futon mattress", "bed", "stands", "room"),
    Pair("furniture", "piece of furniture", "chaise lounge", "sofa", "stands", "room"),
    Pair("furniture", "piece of furniture", "floor cushion", "dining chair", "stands", "room"),
    Pair("furniture", "piece of furniture", "pouf", "armchair", "stands", "room"),
    # vehicles (seed: e-scooter, unicycle, tuk-tuk, golf cart, segway vs motorcycle, bicycle, car);
    # the velomobile pair is ours
    Pair("vehicle", "vehicle", "e-scooter", "motorcycle", "is parked", "street"),
    Pair("vehicle", "vehicle", "unicycle", "bicycle", "is parked", "street"),
    Pair("vehicle", "vehicle", "tuk-tuk", "car", "is parked", "street"),
    Pair("vehicle", "vehicle", "golf cart", "car", "is parked", "street"),
    Pair("vehicle", "vehicle", "segway", "bicycle", "is parked", "street"),
    Pair("vehicle", "vehicle", "velomobile", "bicycle", "is parked", "street"),
    # tableware (seed: chopsticks vs fork; the other five ours)
    Pair("tableware", "tableware item", "pair of chopsticks", "fork", "lies", "table"),
    Pair("tableware", "tableware item", "spork", "spoon", "lies", "table"),
    Pair("tableware", "tableware item", "tea bowl", "coffee mug", "stands", "table"),
    Pair("tableware", "tableware item", "horn cup", "drinking glass", "stands", "table"),
    Pair("tableware", "tableware item", "banana leaf plate", "dinner plate", "lies", "table"),
    Pair("tableware", "tableware item", "soup tureen", "bowl", "stands", "table"),
)

#: environment hints (the place phrase after the verb), per scene kind
ENVIRONMENTS: dict[str, tuple[str, ...]] = {
    "land": ("near a pond", "on a grassy meadow", "in a forest clearing", "on a rocky hillside",
             "on a sandy riverbank"),
    "shore": ("in shallow clear water", "near a sandy shore", "in a calm lagoon"),
    "room": ("in a quiet living room", "in a bright empty bedroom", "on a wooden porch"),
    "street": ("on a quiet street", "in an empty parking lot", "on a paved plaza"),
    "table": ("on a plain wooden tabletop", "on a white tablecloth", "on a gray stone counter"),
    "person": ("stands in a quiet room", "sits in a plain office", "stands in a small library",
               "sits on a park bench"),
}

#: extra elements per scene kind (seed: rock, tree, pond; lamp, plate, cone; books, laptop,
#: chalkboard; the rest ours)
EXTRAS: dict[str, tuple[Extra, ...]] = {
    "land": (
        Extra("rock", "rocks", ("gray", "brown", "white")),
        Extra("tree", "trees", ("green", "orange", "yellow")),
        Extra("bamboo stalk", "bamboo stalks", ("green", "yellow")),
        Extra("flower", "flowers", ("red", "yellow", "white", "purple")),
        Extra("mushroom", "mushrooms", ("red", "brown", "white")),
        Extra("fallen log", "fallen logs", ("brown", "gray")),
    ),
    "shore": (
        Extra("rock", "rocks", ("gray", "brown", "black")),
        Extra("seashell", "seashells", ("white", "pink", "brown")),
        Extra("starfish", "starfish", ("orange", "red", "purple")),
        Extra("buoy", "buoys", ("red", "yellow", "orange")),
    ),
    "room": (
        Extra("lamp", "lamps", ("white", "black", "yellow")),
        Extra("potted plant", "potted plants", ("green", "red")),
        Extra("rug", "rugs", ("gray", "blue", "red", "beige")),
        Extra("side table", "side tables", ("brown", "white", "black")),
        Extra("cushion", "cushions", ("blue", "yellow", "green", "red")),
    ),
    "street": (
        Extra("traffic cone", "traffic cones", ("orange", "yellow")),
        Extra("manhole cover", "manhole covers", ("gray", "black")),
        Extra("lamp post", "lamp posts", ("black", "green", "gray")),
        Extra("bench", "benches", ("brown", "green", "gray")),
        Extra("trash bin", "trash bins", ("green", "blue", "gray")),
    ),
    "table": (
        Extra("plate", "plates", ("white", "blue", "black")),
        Extra("napkin", "napkins", ("white", "red", "yellow")),
        Extra("candle", "candles", ("white", "red", "yellow")),
        Extra("vase", "vases", ("blue", "white", "green")),
        Extra("lemon", "lemons", ("yellow", "green")),
    ),
    "person": (
        Extra("book", "books", ("red", "blue", "green")),
        Extra("laptop", "laptops", ("silver", "black", "white")),
        Extra("chalkboard", "chalkboards", ("green", "black")),
        Extra("potted plant", "potted plants", ("green", "red")),
        Extra("coffee cup", "coffee cups", ("white", "red", "blue")),
        Extra("framed picture", "framed pictures", ("gold", "black", "white")),
    ),
}

#: relative size words of the scale_size knob (objects only): the adversarial flips them
SIZES: tuple[tuple[str, str], ...] = (("small", "large"), ("tiny", "huge"))

# ---- demography -------------------------------------------------------------------------------
#: advantaged group and disadvantaged groups per social axis (seed §3.2 / A.1)
ADVANTAGED: dict[str, Group] = {
    "religion": Group("christian", "Christian person wearing a small cross pendant"),
    "nationality": Group("american", "American person wearing a cap with a US flag patch"),
    "sexual_orientation": Group("heterosexual", "heterosexual person wearing a plain wedding band"),
}
DISADVANTAGED: dict[str, tuple[Group, ...]] = {
    "religion": (
        Group("muslim", "Muslim person wearing a prayer cap"),
        Group("jewish", "Jewish person wearing a kippah"),
    ),
    "nationality": (
        Group("nigerian", "Nigerian person in a colorful agbada"),
        Group("indian", "Indian person in a cotton kurta"),
        Group("mexican", "Mexican person in an embroidered guayabera shirt"),
    ),
    "sexual_orientation": (
        Group("lgbtq+", "LGBTQ+ person wearing a rainbow pride pin"),
    ),
}
#: socio-attribute -> (positive token, negative token)
SOCIO_ATTRS: dict[str, tuple[str, str]] = {
    "wealth": ("rich", "poor"),
    "intellect": ("intelligent", "uneducated"),
    "morality": ("honest", "dishonest"),
    "power": ("powerful", "powerless"),
    "civility": ("polite", "rude"),
}
POLES: tuple[str, ...] = ("positive", "negative")


def vocabulary_dict() -> dict[str, object]:
    """The whole vocabulary as plain data (what `vocabulary_hash` hashes)."""
    return {
        "domains": list(DOMAINS),
        "domain_knobs": {k: list(v) for k, v in DOMAIN_KNOBS.items()},
        "animal_pairs": [asdict(p) for p in ANIMAL_PAIRS],
        "object_pairs": [asdict(p) for p in OBJECT_PAIRS],
        "environments": {k: list(v) for k, v in ENVIRONMENTS.items()},
        "extras": {k: [asdict(e) for e in v] for k, v in EXTRAS.items()},
        "sizes": [list(s) for s in SIZES],
        "advantaged": {k: asdict(g) for k, g in ADVANTAGED.items()},
        "disadvantaged": {k: [asdict(g) for g in v] for k, v in DISADVANTAGED.items()},
        "socio_attrs": {k: list(v) for k, v in SOCIO_ATTRS.items()},
    }


def vocabulary_hash() -> str:
    """sha256 of the vocabulary: changes whenever an entry does."""
    text = json.dumps(vocabulary_dict(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
