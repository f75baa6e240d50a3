"""Tiny random-weight models built from configs, for fast end-to-end tests of the model layer.

Each builder saves a model folder (safetensors) under ``out`` exactly as a user's downloaded
model would look, so tests load it back through the workstation's own loaders. Nothing here
downloads anything; text models use the real CLIP tokenizer from ``../shared/models``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def clip_tokenizer(tokenizer_dir: Path) -> Any:
    from transformers import CLIPTokenizer

    return CLIPTokenizer.from_pretrained(str(tokenizer_dir))


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
    vae = AutoencoderKL(
        block_out_channels=(16, 32),
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
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
    scheduler = DPMSolverMultistepScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear")
    return {
        "unet": unet, "vae": vae, "text_encoder": text_encoder, "tokenizer": clip_tokenizer(tokenizer_dir),
        "scheduler": scheduler, "safety_checker": None, "feature_extractor": None,
    }


def build_sd15_size(out: Path, tokenizer_dir: Path) -> Path:
    from diffusers import StableDiffusionPipeline

    pipe = StableDiffusionPipeline(**sd15_size_components(tokenizer_dir), requires_safety_checker=False)
    pipe.save_pretrained(str(out), safe_serialization=True)
    return out
