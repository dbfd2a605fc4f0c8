/* gleam-reduce's messages: encoders and hostile-input decoders. */
#include <stdio.h>
#include <string.h>

#include "hcodec.h"
#include "hreduce_wire.h"

const char *
hr_msg_name(uint16_t t)
{
	switch (t) {
	case HR_MSG_JOIN: return "JOIN";
	case HR_MSG_JOINED: return "JOINED";
	case HR_MSG_BEGIN: return "BEGIN";
	case HR_MSG_CHUNK: return "CHUNK";
	case HR_MSG_READY: return "READY";
	case HR_MSG_DONE: return "DONE";
	case HR_MSG_FAIL: return "FAIL";
	case HR_MSG_ABORT: return "ABORT";
	}
	return proto_type_name(t);
}

const char *
hr_op_name(int op)
{
	switch (op) {
	case HR_OP_OR: return "or";
	case HR_OP_SUM: return "sum";
	case HR_OP_FSUM: return "fsum";
	case HR_OP_GATHER: return "gather";
	}
	return "unknown";
}

const char *
hr_fail_name(uint32_t code)
{
	switch (code) {
	case HR_FAIL_MISMATCH: return "workers disagree";
	case HR_FAIL_MALFORMED: return "malformed chunk";
	case HR_FAIL_LOST: return "worker lost";
	case HR_FAIL_TIMEOUT: return "timed out";
	case HR_FAIL_LIMIT: return "over the aggregator's limits";
	case HR_FAIL_ABORT: return "a worker aborted";
	}
	return "round failed";
}

uint64_t
hr_nchunks(uint64_t total, uint32_t chunk)
{
	if (chunk == 0)
		return 0;
	return total / chunk + (total % chunk != 0);
}

/* What every BEGIN must satisfy on its own; agreement is the group's. */
int
hr_begin_check(const struct hr_begin *b, uint32_t max_frame, const char **why)
{
	uint64_t cb;

	if (b->id == 0)
		return *why = "stream id 0", -1;
	if (b->chunk < HR_CHUNK_MIN || b->chunk > max_frame - HR_CHUNK_HDR)
		return *why = "chunk size out of range", -1;
	if (b->n > HC_MAX_N)
		return *why = "tensor too large", -1;
	if (hr_nchunks(b->total, b->chunk) > UINT32_MAX)
		return *why = "too many chunks", -1;
	if ((b->flags & ~HR_BEGIN_ZSTD) != 0)
		return *why = "unknown flags", -1;
	if ((b->flags & HR_BEGIN_ZSTD) && b->op != HR_OP_OR)
		return *why = "zstd chunks in an OR stream only", -1;
	switch (b->op) {
	case HR_OP_OR:
		if (b->cell_bits != 0 || b->scale != 0)
			return *why = "OR takes no cells or scale", -1;
		if (b->exponent < HC_EXP_ZERO || b->exponent > HC_EXP_NONFINITE)
			return *why = "exponent out of range", -1;
		if (b->total != hc_bitmap_bytes(b->n))
			return *why = "bitmap size is not n bits", -1;
		break;
	case HR_OP_SUM:
		if (b->cell_bits != 32 && b->cell_bits != 64)
			return *why = "cells of neither 32 nor 64 bits", -1;
		if (b->scale < HC_SCALE_MIN || b->scale > HC_SCALE_MAX)
			return *why = "scale out of range", -1;
		if (b->exponent != 0)
			return *why = "SUM takes no exponent", -1;
		cb = b->cell_bits / 8;
		if (b->total % cb != 0 || b->chunk % cb != 0)
			return *why = "sizes not whole cells", -1;
		break;
	case HR_OP_FSUM:
		if (b->cell_bits != 0 || b->scale != 0 || b->exponent != 0)
			return *why = "FSUM takes no cells, scale or exponent",
			    -1;
		if (b->total % 4 != 0 || b->chunk % 4 != 0)
			return *why = "sizes not whole floats", -1;
		break;
	case HR_OP_GATHER:
		if (b->cell_bits != 0 || b->scale != 0 || b->exponent != 0)
			return *why = "GATHER takes no cells, scale or "
			    "exponent", -1;
		break;
	default:
		return *why = "unknown operation", -1;
	}
	return 0;
}

void
hr_join_enc(struct pw *w, const struct hr_join *m)
{
	pw_u32(w, m->world);
	pw_u32(w, m->rank);
}

int
hr_join_dec(const void *p, size_t len, struct hr_join *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->world = pr_u32(&r);
	m->rank = pr_u32(&r);
	if (pr_done(&r) == -1 || m->world < 1 || m->world > HR_MAX_WORLD ||
	    m->rank >= m->world)
		return -1;
	return 0;
}

void
hr_joined_enc(struct pw *w, uint64_t gen)
{
	pw_u64(w, gen);
}

int
hr_joined_dec(const void *p, size_t len, uint64_t *gen)
{
	struct pr r;

	pr_init(&r, p, len);
	*gen = pr_u64(&r);
	return pr_done(&r);
}

void
hr_begin_enc(struct pw *w, const struct hr_begin *m)
{
	pw_u64(w, m->id);
	pw_u8(w, m->op);
	pw_u8(w, m->cell_bits);
	pw_u16(w, m->flags);
	pw_u32(w, (uint32_t)m->exponent);
	pw_u32(w, (uint32_t)m->scale);
	pw_u64(w, m->n);
	pw_u64(w, m->total);
	pw_u32(w, m->chunk);
}

int
hr_begin_dec(const void *p, size_t len, struct hr_begin *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->id = pr_u64(&r);
	m->op = pr_u8(&r);
	m->cell_bits = pr_u8(&r);
	m->flags = pr_u16(&r);
	m->exponent = (int32_t)pr_u32(&r);
	m->scale = (int32_t)pr_u32(&r);
	m->n = pr_u64(&r);
	m->total = pr_u64(&r);
	m->chunk = pr_u32(&r);
	return pr_done(&r);
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

void
hr_chunk_hdr_enc(uint8_t out[HR_CHUNK_HDR], uint64_t id, uint32_t index,
    uint32_t rank)
{
	put32(out, (uint32_t)id);
	put32(out + 4, (uint32_t)(id >> 32));
	put32(out + 8, index);
	put32(out + 12, rank);
}

int
hr_chunk_dec(const void *p, size_t len, struct hr_chunk *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->id = pr_u64(&r);
	m->index = pr_u32(&r);
	m->rank = pr_u32(&r);
	if (r.bad)
		return -1;
	m->len = len - HR_CHUNK_HDR;
	m->data = (const uint8_t *)p + HR_CHUNK_HDR;
	return 0;
}

void
hr_ready_enc(struct pw *w, const struct hr_ready *m)
{
	uint32_t i;

	pw_u64(w, m->id);
	pw_u32(w, (uint32_t)m->exponent);
	pw_u32(w, m->world);
	for (i = 0; i < m->world && i < HR_MAX_WORLD; i++)
		pw_u64(w, m->total[i]);
}

int
hr_ready_dec(const void *p, size_t len, struct hr_ready *m)
{
	struct pr r;
	uint32_t i;

	pr_init(&r, p, len);
	m->id = pr_u64(&r);
	m->exponent = (int32_t)pr_u32(&r);
	m->world = pr_u32(&r);
	if (r.bad || m->world < 1 || m->world > HR_MAX_WORLD)
		return -1;
	for (i = 0; i < m->world; i++)
		m->total[i] = pr_u64(&r);
	return pr_done(&r);
}

void
hr_done_enc(struct pw *w, uint64_t id)
{
	pw_u64(w, id);
}

int
hr_done_dec(const void *p, size_t len, uint64_t *id)
{
	struct pr r;

	pr_init(&r, p, len);
	*id = pr_u64(&r);
	return pr_done(&r);
}

void
hr_fail_enc(struct pw *w, const struct hr_fail_msg *m)
{
	pw_u64(w, m->id);
	pw_u32(w, m->code);
	pw_str(w, m->text);
}

int
hr_fail_dec(const void *p, size_t len, struct hr_fail_msg *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->id = pr_u64(&r);
	m->code = pr_u32(&r);
	pr_str(&r, m->text, HR_REASON_MAX);
	return pr_done(&r);
}

void
hr_abort_enc(struct pw *w, const struct hr_abort *m)
{
	pw_u64(w, m->id);
	pw_str(w, m->text);
}

int
hr_abort_dec(const void *p, size_t len, struct hr_abort *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->id = pr_u64(&r);
	pr_str(&r, m->text, HR_REASON_MAX);
	return pr_done(&r);
}
