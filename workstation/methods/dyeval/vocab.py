"""Built-in vocabularies: the rule-based scene-graph parser's lexicon and the template writer's words.

Everything here is plain data (lower-case words). The parser (`parse.py`) uses the word classes;
the template language model (`templates.py`) composes prompts from the categories below, so the
scene graph of every template prompt is known by construction.
"""

from __future__ import annotations

from typing import Final

# --- function words -------------------------------------------------------------------------------

#: determiners kept on the object as its article ("a"/"an" are stored as "a" and re-chosen on render)
ARTICLES: Final[frozenset[str]] = frozenset({
    "a", "an", "the", "its", "his", "her", "their", "our", "my", "your", "this", "that", "these", "those",
    "each", "every",
})

#: quantities: kept as attributes (the paper's parse keeps "Two" as an attribute of "Greyhound")
QUANTIFIERS: Final[frozenset[str]] = frozenset({
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve", "dozen",
    "several", "many", "few", "some", "multiple", "countless", "numerous", "single", "pair", "both",
})

CONJUNCTIONS: Final[frozenset[str]] = frozenset({"and", "or", "but", "while", "as", "where", "when"})

#: prepositions and multi-word prepositions, longest first when matched
PREPOSITIONS: Final[tuple[str, ...]] = (
    "in front of", "on top of", "to the left of", "to the right of", "next to", "close to", "far from",
    "on the left of", "on the right of", "in the middle of", "surrounded by", "covered in", "covered with",
    "made of", "filled with", "out of", "away from", "up to",
    "with", "in", "on", "under", "within", "inside", "behind", "above", "below", "beside", "near",
    "between", "among", "amid", "amidst", "over", "across", "around", "through", "against", "along",
    "atop", "beneath", "underneath", "into", "onto", "toward", "towards", "at", "by", "from", "of",
    "during", "without", "like", "past", "upon",
)

#: verbs that relate two objects when they stand between two noun phrases
VERBS: Final[frozenset[str]] = frozenset({
    "holding", "holds", "hold", "chasing", "chases", "riding", "rides", "wearing", "wears", "carrying",
    "carries", "eating", "eats", "hugging", "hugs", "feeding", "feeds", "watching", "watches", "reading",
    "reads", "playing", "plays", "pushing", "pushes", "pulling", "pulls", "drinking", "drinks",
    "throwing", "throws", "catching", "catches", "kicking", "kicks", "touching", "touches", "licking",
    "licks", "greeting", "greets", "following", "follows", "protecting", "protects", "teaching",
    "teaches", "painting", "paints", "climbing", "climbs", "crossing", "crosses", "facing", "faces",
    "sitting", "sits", "standing", "stands", "lying", "lies", "leaning", "leans", "walking", "walks",
    "taking", "takes", "bringing", "brings", "cuddling", "cuddles", "scratching", "scratches", "using",
    "uses", "looking", "looks", "resting", "rests", "hiding", "hides", "floating", "floats", "flying",
    "flies", "reflecting", "reflects", "casting", "casts", "shading", "shades", "guarding", "guards",
})

ADVERB_SUFFIX: Final = "ly"

# --- content words ------------------------------------------------------------------------------

COLORS: Final[tuple[str, ...]] = (
    "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray",
    "grey", "golden", "silver", "violet", "turquoise", "beige", "crimson", "teal", "vibrant", "pastel",
)
SIZES: Final[tuple[str, ...]] = (
    "tiny", "small", "little", "big", "large", "huge", "giant", "tall", "short", "long", "massive",
    "miniature", "enormous", "narrow", "wide", "thin", "thick",
)
MATERIALS: Final[tuple[str, ...]] = (
    "silk", "wooden", "metal", "metallic", "glass", "stone", "plastic", "leather", "cotton", "woolen",
    "paper", "marble", "velvet", "denim", "ceramic", "porcelain", "bronze", "iron", "steel", "crystal",
    "clay", "straw", "wicker", "copper",
)
TEXTURES: Final[tuple[str, ...]] = (
    "fluffy", "smooth", "rough", "shiny", "furry", "soft", "fuzzy", "glossy", "matte", "striped",
    "spotted", "checkered", "polka-dotted", "wrinkled", "cracked", "rusty", "transparent", "translucent",
)
SHAPES: Final[tuple[str, ...]] = (
    "round", "square", "triangular", "crescent", "oval", "spherical", "cubic", "hexagonal", "curved",
    "rectangular", "star-shaped", "heart-shaped", "spiral", "pointed", "flat",
)
QUALITIES: Final[tuple[str, ...]] = (
    "luxurious", "elegant", "floral", "ornate", "ancient", "modern", "traditional", "old", "new",
    "vintage", "rustic", "intricate", "delicate", "beautiful", "sleek", "slender", "friendly",
    "intelligent", "happy", "sad", "angry", "calm", "bright", "dark", "glowing", "wet", "dry", "broken",
    "empty", "full", "busy", "quiet", "wild", "cute", "young", "elderly", "clean", "dirty", "hot", "cold",
    "warm", "frozen", "colorful", "ornamental", "abstract", "realistic", "surreal", "mysterious",
    "majestic", "lonely", "curious", "playful", "sleepy", "hungry", "proud", "shy", "brave", "gentle",
    "fierce", "loyal", "famous", "historic", "sacred", "festive", "royal", "medieval", "futuristic",
    "japanese", "chinese", "indian", "african", "mexican", "egyptian", "greek", "roman", "mayan", "celtic",
    "persian", "korean", "italian", "french", "american", "nordic",
)
DYNAMIC: Final[tuple[str, ...]] = (
    "running", "flying", "melting", "growing", "spinning", "falling", "jumping", "dancing", "burning",
    "blooming", "wagging", "sleeping", "swimming", "rising", "shattering", "dripping", "flowing",
    "swirling", "exploding", "fading", "wilting", "rolling", "soaring", "galloping", "sprouting",
    "evaporating", "crumbling", "flickering",
)

#: dynamic attributes that suit each noun category (the template writer pairs them)
DYNAMIC_BY_CATEGORY: Final[dict[str, tuple[str, ...]]] = {
    "animals": ("running", "jumping", "sleeping", "swimming", "dancing", "galloping"),
    "plants": ("growing", "blooming", "wilting", "sprouting"),
    "nature": ("flowing", "rising", "swirling", "melting", "exploding", "evaporating", "fading"),
    "objects": ("spinning", "burning", "flickering", "rolling", "shattering", "crumbling", "dripping"),
    "food": ("melting", "dripping", "rolling", "crumbling"),
    "people": ("running", "jumping", "dancing", "sleeping", "falling"),
}

ADJECTIVES: Final[frozenset[str]] = frozenset(COLORS + SIZES + MATERIALS + TEXTURES + SHAPES + QUALITIES)

#: nouns by category (the template writer's objects and the parser's noun lexicon)
NOUNS_BY_CATEGORY: Final[dict[str, tuple[str, ...]]] = {
    "animals": ("dog", "cat", "horse", "bird", "fish", "rabbit", "elephant", "giraffe", "lion", "tiger",
                "bear", "fox", "owl", "eagle", "parrot", "penguin", "dolphin", "whale", "turtle", "frog",
                "butterfly", "bee", "mouse", "cow", "sheep", "goat", "deer", "wolf", "squirrel", "duck",
                "greyhound", "retriever", "puppy", "kitten", "snake", "zebra", "monkey", "camel"),
    "vehicles": ("car", "bicycle", "bus", "truck", "train", "boat", "ship", "airplane", "motorcycle",
                 "scooter", "tractor", "helicopter", "submarine", "sailboat", "taxi", "tram", "rocket"),
    "furniture": ("chair", "table", "sofa", "couch", "bed", "lamp", "bookshelf", "desk", "stool",
                  "wardrobe", "bench", "cabinet", "mirror", "rug", "armchair", "clock"),
    "food": ("apple", "banana", "cake", "pizza", "bread", "cup", "teapot", "bowl", "sandwich", "orange",
             "strawberry", "pie", "cookie", "carrot", "lemon", "watermelon", "croissant"),
    "plants": ("tree", "flower", "rose", "tulip", "sunflower", "cactus", "fern", "oak", "palm", "bush",
               "leaf", "mushroom", "vine", "bonsai"),
    "clothing": ("kimono", "hat", "scarf", "dress", "coat", "jacket", "boot", "shoe", "umbrella", "sari",
                 "turban", "poncho", "hanbok", "cloak", "glove", "necklace", "crown", "mask", "backpack"),
    "people": ("man", "woman", "child", "boy", "girl", "person", "owner", "teacher", "student", "chef",
               "doctor", "farmer", "dancer", "musician", "soldier", "king", "queen", "grandmother",
               "grandfather", "mother", "father", "baby", "friend", "family", "crowd", "artist", "monk"),
    "nature": ("moon", "sun", "cloud", "mountain", "river", "lake", "ocean", "rock", "star", "rainbow",
               "volcano", "waterfall", "island", "tornado", "wave", "snowflake", "iceberg", "fire"),
    "objects": ("ball", "book", "guitar", "piano", "violin", "camera", "phone", "key", "bottle", "vase",
                "candle", "lantern", "clock", "kite", "balloon", "box", "bag", "pencil", "ladder", "bell",
                "fan", "drum", "sword", "shield", "flag", "map", "globe", "toy", "embroidery", "pattern",
                "tail", "leash", "bone", "frame", "painting", "statue", "fountain", "bridge", "tower",
                "house", "castle", "temple", "pagoda", "pyramid", "lighthouse", "windmill", "tent"),
    "body": ("body", "legs", "leg", "face", "hand", "hands", "eyes", "eye", "hair", "coat", "fur", "wings",
             "wing", "paw", "paws", "head", "feathers", "beak", "smile", "belly"),
    "abstract": ("freedom", "love", "time", "hope", "fear", "joy", "sadness", "peace", "justice",
                 "wisdom", "loneliness", "nostalgia", "chaos", "harmony", "friendship", "memory",
                 "dream", "silence", "anger", "courage", "curiosity", "future", "past", "present",
                 "infinity", "idea", "concept", "emotion", "philosophy", "truth"),
}

#: nouns that head a place or time phrase: "in the park", "at night" become context, not objects
SCENE_NOUNS: Final[frozenset[str]] = frozenset({
    "park", "room", "kitchen", "garden", "forest", "city", "street", "beach", "desert", "field", "meadow",
    "jungle", "sky", "background", "foreground", "night", "morning", "evening", "afternoon", "sunset",
    "sunrise", "dawn", "dusk", "winter", "summer", "autumn", "spring", "fall", "rain", "snow", "fog",
    "storm", "space", "underwater", "village", "town", "countryside", "market", "museum", "library",
    "classroom", "office", "studio", "style", "era", "century", "period", "dynasty", "festival",
    "ceremony", "landscape", "scene", "setting", "distance", "world", "universe", "home", "house",
    "snowfall", "moonlight", "sunlight", "daylight", "twilight", "hall", "palace", "courtyard",
    "harbor", "airport", "station", "farm", "mountains", "hills", "valley", "coast", "shore",
})

NOUNS: Final[frozenset[str]] = frozenset(
    w for ws in NOUNS_BY_CATEGORY.values() for w in ws) | frozenset({"hues", "hue", "colors", "shades"})

# --- template writer's tables -------------------------------------------------------------------

SPATIAL_RELATIONS: Final[tuple[str, ...]] = (
    "on", "under", "next to", "behind", "in front of", "above", "below", "inside", "beside", "on top of",
    "to the left of", "to the right of", "between",
)
INTERACTIONS: Final[tuple[str, ...]] = (
    "holding", "chasing", "riding", "carrying", "hugging", "feeding", "watching", "pushing", "pulling",
    "following", "greeting", "protecting",
)
#: implicit (social) relations: (subject, predicate, object) with people / animals
IMPLICIT_PAIRS: Final[tuple[tuple[str, str, str], ...]] = (
    ("mother", "comforting", "child"), ("teacher", "guiding", "student"), ("owner", "walking with", "dog"),
    ("grandfather", "telling a story to", "child"), ("doctor", "reassuring", "patient"),
    ("friend", "consoling", "friend"), ("king", "knighting", "soldier"), ("chef", "training", "apprentice"),
    ("girl", "sharing an umbrella with", "boy"), ("farmer", "caring for", "horse"),
)
STYLES: Final[tuple[str, ...]] = (
    "in the style of impressionism", "as a watercolor painting", "in the style of cubism",
    "as a pencil sketch", "in pixel art style", "as an ukiyo-e woodblock print", "in art deco style",
    "as a baroque oil painting", "in a minimalist flat style", "as a stained glass window",
    "in the style of pop art", "as a charcoal drawing", "in a cyberpunk style", "as a mosaic",
)
CULTURE_ITEMS: Final[tuple[tuple[str, str], ...]] = (
    ("kimono", "at a japanese tea ceremony"), ("sari", "during diwali"), ("hanbok", "at a korean wedding"),
    ("poncho", "at an andean market"), ("lantern", "during the chinese lantern festival"),
    ("turban", "at a sikh gurdwara"), ("mask", "at the venice carnival"),
    ("dancer", "at a mexican day of the dead parade"), ("drum", "at a west african celebration"),
    ("pagoda", "during cherry blossom season"), ("monk", "at a tibetan monastery"),
)
KNOWLEDGE_ITEMS: Final[tuple[tuple[str, str], ...]] = (
    ("pyramid", "in ancient egypt"), ("castle", "in medieval europe"), ("ship", "in the age of sail"),
    ("train", "in the 1920s"), ("telescope", "of galileo"), ("soldier", "in the roman empire"),
    ("printing press", "of gutenberg"), ("lighthouse", "of alexandria"), ("astronaut", "on the 1969 moon landing"),
    ("temple", "of the mayan civilisation"), ("windmill", "in 17th century holland"),
)
ABSTRACT_FORMS: Final[tuple[str, ...]] = (
    "as", "represented by", "symbolized by", "shown as", "personified as",
)

#: sub-topic tables: the template writer's proposals for the built-in roots and common themes
SUBTOPICS: Final[dict[str, tuple[str, ...]]] = {
    "material objects": ("Animals", "Vehicles", "Furniture", "Food", "Plants", "Clothing"),
    "abstract objects": ("Emotions", "Ideas and concepts", "Philosophies", "Time and memory"),
    "explicit relations": ("Spatial arrangements", "Object interactions", "Relative size", "Counting and groups"),
    "implicit relations": ("Family relationships", "Social roles", "Care and protection", "Teaching and learning"),
    "static attributes": ("Colors", "Shapes", "Textures", "Materials"),
    "dynamic attributes": ("Movement", "Growth", "Transformation", "Weather and light changes"),
    "style": ("Painting styles", "Drawing techniques", "Digital art styles", "Historical art movements"),
    "culture": ("Traditional clothing", "Festivals", "Religious symbols", "Cultural practices"),
    "knowledge": ("Historical events", "Landmarks", "Scientific instruments", "Ancient civilisations"),
    "animals": ("Dogs", "Birds", "Sea creatures", "Wild animals", "Farm animals"),
    "vehicles": ("Cars", "Boats", "Aircraft", "Bicycles"),
    "spatial arrangements": ("Object orientation", "Proximity and distance", "Size comparison and scaling"),
}

#: how a topic is widened when no table applies ("finer details ... combinations ... relationships")
EXPANSIONS: Final[tuple[str, ...]] = (
    "{topic} with unusual colors",
    "{topic} in relation to people",
    "{topic} in a cultural setting",
    "Counting {topic}",
    "{topic} in motion",
    "{topic} in an artistic style",
    "{topic} next to much larger objects",
    "{topic} at night",
)
