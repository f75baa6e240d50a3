"""Tiny random-weight models built from configs, for fast end-to-end tests of the model layer.

Each builder saves a model folder (safetensors) under ``out`` exactly as a user's downloaded
model would look, so tests load it back through the workstation's own loaders. Nothing here
downloads anything; text models use the real CLIP tokenizer from ``../shared/models``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def clip_tokenizer(tokenizer_dir: Path) -> Any:
    from transformers import CLIPTokenizer

    return CLIPTokenizer.from_pretrained(str(tokenizer_dir), model_max_length=77)


def tiny_sd_components(tokenizer_dir: Path, *, gligen: bool = False, seed: int = 0) -> dict[str, Any]:
    """UNet / VAE / CLIP text encoder with small hidden sizes (SD 1.x layout), DDIM-style scheduler."""
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    _seed(seed)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64),
        layers_per_block=1,
        sample_size=16,
        in_channels=4,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=8,
        norm_num_groups=8,
        attention_type="gated" if gligen else "default",
    )
    _seed(seed + 1)
    vae = AutoencoderKL(  # three blocks: latents are 1/4 of the image size
        block_out_channels=(8, 16, 16),
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * 3,
        up_block_types=("UpDecoderBlock2D",) * 3,
        latent_channels=4,
        norm_num_groups=8,
        sample_size=32,
    )
    _seed(seed + 2)
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            bos_token_id=49406, eos_token_id=49407, pad_token_id=49407, hidden_size=32,
            intermediate_size=64, layer_norm_eps=1e-5, num_attention_heads=4, num_hidden_layers=2,
            vocab_size=49408, max_position_embeddings=77, projection_dim=32,
        )
    )
    scheduler = DDIMScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
        set_alpha_to_one=False, steps_offset=1,
    )
    return {
        "unet": unet, "vae": vae, "text_encoder": text_encoder, "tokenizer": clip_tokenizer(tokenizer_dir),
        "scheduler": scheduler, "safety_checker": None, "feature_extractor": None,
    }


def build_tiny_sd(out: Path, tokenizer_dir: Path, *, gligen: bool = False) -> Path:
    """A tiny Stable Diffusion (or GLIGEN) pipeline folder: model_index.json + components."""
    from diffusers import StableDiffusionGLIGENPipeline, StableDiffusionPipeline

    cls = StableDiffusionGLIGENPipeline if gligen else StableDiffusionPipeline
    pipe = cls(**tiny_sd_components(tokenizer_dir, gligen=gligen), requires_safety_checker=False)
    pipe.save_pretrained(str(out), safe_serialization=True)
    return out


def build_tiny_sdxl(out: Path, tokenizer_dir: Path) -> Path:
    """A tiny SDXL pipeline (two CLIP text encoders, text-time conditioning) saved to ``out``."""
    from diffusers import AutoencoderKL, EulerDiscreteScheduler, StableDiffusionXLPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    _seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64), layers_per_block=1, sample_size=16, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        attention_head_dim=(2, 4), use_linear_projection=True, addition_embed_type="text_time",
        addition_time_embed_dim=8, transformer_layers_per_block=(1, 1), projection_class_embeddings_input_dim=80,
        cross_attention_dim=64, norm_num_groups=8,
    )
    _seed(1)
    vae = AutoencoderKL(
        block_out_channels=(8, 16, 16), in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 3,
        up_block_types=("UpDecoderBlock2D",) * 3, latent_channels=4, norm_num_groups=8, sample_size=64,
    )
    text = CLIPTextConfig(
        bos_token_id=49406, eos_token_id=49407, pad_token_id=49407, hidden_size=32, intermediate_size=64,
        num_attention_heads=4, num_hidden_layers=2, vocab_size=49408, max_position_embeddings=77,
        projection_dim=32, hidden_act="gelu",
    )
    _seed(2)
    te1, te2 = CLIPTextModel(text), CLIPTextModelWithProjection(text)
    scheduler = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                       steps_offset=1, timestep_spacing="leading")
    tok = clip_tokenizer(tokenizer_dir)
    pipe = StableDiffusionXLPipeline(vae=vae, text_encoder=te1, text_encoder_2=te2, tokenizer=tok, tokenizer_2=tok,
                                     unet=unet, scheduler=scheduler)
    pipe.save_pretrained(str(out), safe_serialization=True)
    return out


def sd15_size_components(tokenizer_dir: Path) -> dict[str, Any]:
    """Random-weight components with the Stable Diffusion 1.5 sizes (for benchmarks)."""
    from diffusers import AutoencoderKL, DPMSolverMultistepScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    unet = UNet2DConditionModel(
        sample_size=64, cross_attention_dim=768, block_out_channels=(320, 640, 1280, 1280),
        attention_head_dim=8, layers_per_block=2,
    )
    vae = AutoencoderKL(
        block_out_channels=(128, 256, 512, 512), latent_channels=4, layers_per_block=2,
        down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
        sample_size=512,
    )
    text_encoder = CLIPTextModel(CLIPTextConfig(hidden_size=768, intermediate_size=3072, num_attention_heads=12,
                                                num_hidden_layers=12, projection_dim=768, hidden_act="quick_gelu"))
    scheduler = DPMSolverMultistepScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                            steps_offset=1)
    return {
        "unet": unet, "vae": vae, "text_encoder": text_encoder, "tokenizer": clip_tokenizer(tokenizer_dir),
        "scheduler": scheduler, "safety_checker": None, "feature_extractor": None,
    }


def build_sd15_size(out: Path, tokenizer_dir: Path) -> Path:
    from diffusers import StableDiffusionPipeline

    pipe = StableDiffusionPipeline(**sd15_size_components(tokenizer_dir), requires_safety_checker=False)
    pipe.save_pretrained(str(out), safe_serialization=True)
    return out


# ------------------------------------------------------------------------------------------------
# detectors

_VIT_TEXT = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_hidden_layers=2,
                 vocab_size=49408, max_position_embeddings=16, bos_token_id=49406, eos_token_id=49407,
                 pad_token_id=0)


def build_tiny_owl(out: Path, tokenizer_dir: Path, *, v2: bool = True, image_size: int = 64) -> Path:
    """A tiny OWLv2 (or OWL-ViT) detector folder with processor: CLIP tokenizer, 8-px patches."""
    import transformers as tf

    _seed(0)
    vision = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_hidden_layers=2,
                  image_size=image_size, patch_size=8)
    if v2:
        config = tf.Owlv2Config(text_config=_VIT_TEXT, vision_config=vision, projection_dim=32)
        model = tf.Owlv2ForObjectDetection(config)
        image_processor = tf.Owlv2ImageProcessorPil(size={"height": image_size, "width": image_size})
        processor = tf.Owlv2Processor(image_processor=image_processor, tokenizer=_owl_tokenizer(tokenizer_dir))
    else:
        config = tf.OwlViTConfig(text_config=_VIT_TEXT, vision_config=vision, projection_dim=32)
        model = tf.OwlViTForObjectDetection(config)
        image_processor = tf.OwlViTImageProcessorPil(
            size={"height": image_size, "width": image_size}, crop_size={"height": image_size, "width": image_size}
        )
        processor = tf.OwlViTProcessor(image_processor=image_processor, tokenizer=_owl_tokenizer(tokenizer_dir))
    model.save_pretrained(str(out), safe_serialization=True)
    processor.save_pretrained(str(out))
    return out


def _owl_tokenizer(tokenizer_dir: Path) -> Any:
    from transformers import CLIPTokenizer

    return CLIPTokenizer.from_pretrained(str(tokenizer_dir), model_max_length=16, pad_token="!")


def _bert_vocab() -> dict[str, int]:
    """A small WordPiece vocabulary covering the COCO names and the words the tests query."""
    from workstation.detection.vocab import COCO_CLASSES

    words: list[str] = []
    for name in COCO_CLASSES + ("a", "photo", "of", "sofa", "television", "unicorn"):
        for w in name.split():
            if w not in words:
                words.append(w)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "?", "##s"] + words
    return {t: i for i, t in enumerate(tokens)}


def build_tiny_grounding_dino(out: Path) -> Path:
    """A tiny Grounding DINO (Swin + BERT, one encoder and two decoder layers) with its processor."""
    import transformers as tf

    tokenizer = tf.BertTokenizer(vocab=_bert_vocab(), do_lower_case=True)
    _seed(0)
    config = tf.GroundingDinoConfig(
        backbone_config=tf.SwinConfig(
            image_size=64, patch_size=4, embed_dim=8, depths=[1, 1, 1, 1], num_heads=[1, 1, 1, 1], window_size=4,
            out_indices=[2, 3, 4],
        ),
        text_config=tf.BertConfig(
            vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=256,
        ),
        d_model=32, encoder_layers=1, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=32, decoder_ffn_dim=32, num_queries=30, num_feature_levels=4, encoder_n_points=2,
        decoder_n_points=2, max_text_len=256,
    )
    model = tf.GroundingDinoForObjectDetection(config)
    image_processor = tf.GroundingDinoImageProcessorPil(size={"shortest_edge": 64, "longest_edge": 96})
    processor = tf.GroundingDinoProcessor(image_processor=image_processor, tokenizer=tokenizer)
    model.save_pretrained(str(out), safe_serialization=True)
    processor.save_pretrained(str(out))
    return out


def build_tiny_detr(out: Path) -> Path:
    """A tiny DETR (small ResNet backbone, COCO label names) with its image processor."""
    import transformers as tf

    from workstation.detection.vocab import COCO_CLASSES

    _seed(0)
    id2label = dict(enumerate(COCO_CLASSES))
    config = tf.DetrConfig(
        backbone_config=tf.ResNetConfig(
            embedding_size=8, hidden_sizes=[8, 16, 16, 32], depths=[1, 1, 1, 1], layer_type="basic",
            out_features=["stage4"],
        ),
        d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=32, decoder_ffn_dim=32, num_queries=20, id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
    )
    model = tf.DetrForObjectDetection(config)
    processor = tf.DetrImageProcessorPil(size={"shortest_edge": 64, "longest_edge": 96})
    model.save_pretrained(str(out), safe_serialization=True)
    processor.save_pretrained(str(out))
    return out


FLORENCE_TASK_TOKENS = ("<od>", "</od>", "<ocr>", "</ocr>", "<cap>", "</cap>", "<ncap>", "</ncap>", "<dcap>",
                        "</dcap>", "<grounding>", "</grounding>", "<seg>", "</seg>", "<sep>", "<region_cap>",
                        "</region_cap>", "<region_to_desciption>", "</region_to_desciption>", "<proposal>",
                        "</proposal>", "<poly>", "</poly>", "<and>")


def _florence_tokenizer() -> Any:
    """A small byte-level BPE tokenizer with Florence-2's special tokens and 1000 <loc_N> tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    from workstation.detection.vocab import COCO_CLASSES

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [
        "Locate the objects with category name in the image.", "Locate the phrases in the caption:",
        "Locate in the image.", "What does the image describe? a photo of", *COCO_CLASSES, "sofa television unicorn",
    ]
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    extra = ["<image>", *FLORENCE_TASK_TOKENS, *(f"<loc_{i}>" for i in range(1000))]
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
        model_max_length=1024, extra_special_tokens={"image_token": "<image>"},
    )
    fast.add_tokens(extra, special_tokens=True)
    return fast


def build_tiny_florence2(out: Path, image_size: int = 64) -> Path:
    """A tiny Florence-2 (DaViT vision tower, BART text model) with its processor."""
    import transformers as tf

    tokenizer = _florence_tokenizer()
    _seed(0)
    vision = tf.Florence2VisionConfig(
        depths=(1, 1, 1, 1), embed_dim=(8, 16, 16, 32), num_heads=(1, 1, 1, 2), num_groups=(1, 1, 1, 2),
        window_size=2, projection_dim=32, max_position_embeddings=16,
    )
    text = tf.BartConfig(
        vocab_size=len(tokenizer), d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=128,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        decoder_start_token_id=tokenizer.eos_token_id, forced_bos_token_id=tokenizer.bos_token_id,
    )
    config = tf.Florence2Config(text_config=text, vision_config=vision, image_token_id=tokenizer.image_token_id)
    model = tf.Florence2ForConditionalGeneration(config)
    image_processor = tf.CLIPImageProcessorPil(
        size={"height": image_size, "width": image_size}, crop_size={"height": image_size, "width": image_size},
        do_center_crop=False, image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225],
    )
    image_processor.image_seq_length = (image_size // 32) ** 2 + 1
    processor = tf.Florence2Processor(image_processor=image_processor, tokenizer=tokenizer)
    model.save_pretrained(str(out), safe_serialization=True)
    processor.save_pretrained(str(out))
    return out


def as_hf_cache_entry(folder: Path, cache_dir: Path, repo_id: str, commit: str = "0123456789abcdef0123456789abcdef01234567") -> str:
    """Lay ``folder`` out as the local Hugging Face cache does (refs/main → snapshots/<commit>)."""
    import shutil

    repo = cache_dir / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    shutil.copytree(folder, repo / "snapshots" / commit)
    return commit


# ------------------------------------------------------------------------------------------------
# scorers

_CLIP_TEXT = dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_hidden_layers=2,
                  vocab_size=49408, max_position_embeddings=77, bos_token_id=49406, eos_token_id=49407,
                  pad_token_id=49407)


def build_tiny_clip(out: Path, tokenizer_dir: Path, *, image_size: int = 32, seed: int = 0,
                    logit_scale: float = 2.6592) -> Path:
    """A tiny CLIPModel (2-layer towers, 16-d projections, 77-token context) with its processor:
    the real CLIP tokenizer, PIL image processor (shortest edge + centre crop to ``image_size``)."""
    import transformers as tf

    _seed(seed)
    config = tf.CLIPConfig(
        text_config=_CLIP_TEXT,
        vision_config=dict(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_hidden_layers=2,
                           image_size=image_size, patch_size=8),
        projection_dim=16, logit_scale_init_value=logit_scale,
    )
    model = tf.CLIPModel(config)
    image_processor = tf.CLIPImageProcessorPil(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    )
    processor = tf.CLIPProcessor(image_processor=image_processor, tokenizer=clip_tokenizer(tokenizer_dir))
    model.save_pretrained(str(out), safe_serialization=True)
    processor.save_pretrained(str(out))
    return out


# the words of the VQA tests' questions, prompts and answers
VQA_WORDS = (
    "yes no is are there a an the what color how many of to left right above below does this image show "
    "cat cats dog dogs bird cube sphere table red blue green white black one two three four photo on and or "
    "wooden apple apples bowl"
).split()


def write_bert_vocab(folder: Path, words: tuple[str, ...] | list[str] = tuple(VQA_WORDS)) -> Path:
    """A WordPiece vocab.txt: special tokens, BLIP's decoder start token [DEC], punctuation, ``words``."""
    folder.mkdir(parents=True, exist_ok=True)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[DEC]", "?", ".", ",", "##s"]
    tokens += [w for w in dict.fromkeys(words) if w not in tokens]
    (folder / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return folder / "vocab.txt"


def build_tiny_blip_vqa(out: Path, vocab_dir: Path, *, image_size: int = 32, seed: int = 0,
                        answer_bias: dict[str, float] | None = None) -> Path:
    """A tiny BlipForQuestionAnswering (2-layer ViT and BERT towers) with a BERT tokenizer read from
    ``vocab_dir/vocab.txt`` ([DEC] as the decoder start token, [SEP] ending answers) and a PIL
    image processor resizing to ``image_size``. ``answer_bias`` adds to the answer decoder's output
    bias of those words: {"yes": 50.0} makes a model that answers "yes" to everything."""
    import transformers as tf

    tokenizer = tf.BertTokenizer.from_pretrained(str(vocab_dir), bos_token="[DEC]", do_lower_case=True)
    _seed(seed)
    text = tf.BlipTextConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, encoder_hidden_size=32,
        bos_token_id=tokenizer.bos_token_id, sep_token_id=tokenizer.sep_token_id,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.sep_token_id,
    )
    vision = tf.BlipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                 image_size=image_size, patch_size=8)
    config = tf.BlipConfig(text_config=text.to_dict(), vision_config=vision.to_dict())
    model = tf.BlipForQuestionAnswering(config)
    if answer_bias:
        import torch

        with torch.no_grad():
            for word, b in answer_bias.items():
                model.text_decoder.cls.predictions.bias[tokenizer.convert_tokens_to_ids(word)] += b
    image_processor = tf.BlipImageProcessorPil(size={"height": image_size, "width": image_size})
    processor = tf.BlipProcessor(image_processor=image_processor, tokenizer=tokenizer)
    model.save_pretrained(str(out), safe_serialization=True)
    processor.save_pretrained(str(out))
    return out
