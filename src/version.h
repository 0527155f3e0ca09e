/* SPDX-License-Identifier: MIT */
#pragma once
#ifndef GPUBOOT_VERSION
#define GPUBOOT_VERSION "0.1.0"
#endif
