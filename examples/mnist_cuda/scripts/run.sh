#!/bin/bash
export CUDA_VISIBLE_DEVICES=0
python3 train.py --epochs 1 "$@"
