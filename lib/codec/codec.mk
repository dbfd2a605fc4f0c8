# The codec and its allreduce library (hcodec, hreduce): built into
# $(LIBA) with the shared code, installed with its public headers and
# pkg-config files.  Included by the top-level Makefile.  The headers
# installed hold the public API alone: they include no other header of
# the toolkit (make check compiles each by itself against the installed
# tree).
CODEC_HEADERS	:= lib/codec/hcodec.h lib/codec/hreduce.h
CODEC_PC	:= gleam-hcodec gleam-hreduce
