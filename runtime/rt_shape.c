/*
 * rt_shape.c - run-time shape functions: the dims of a data-dependent
 * node's output (Reshape to a computed shape, Unsqueeze at computed axes),
 * worked out from the int64 tensor that decides them just before the node's
 * kernel runs. They bind the output's data symbols; then the values whose
 * dims mention them get their blocks. Included by rt_model.c.
 *
 * Each function checks what the ONNX operator requires of the values and
 * fails the run with COLLAGEC_E_SHAPE naming the node when they break it,
 * as a kernel cannot.
 */

#include "rt_imgprobe.c"

/* The dims of value id under the symbols bound so far (all bound: it was computed). */
static int value_dims(collagec_model *m, int id, int64_t *dims)
{
	const struct rt_value *v = &rt_desc.values[id];

	for (int k = 0; k < v->rank; k++)
		dims[k] = v->kind == RT_INPUT ? m->in_dims[v->io][k] : dim_eval(&v->dims[k], m->syms);
	return v->rank;
}

/* Reshape: 0 copies the input's dim (unless allowzero), one -1 takes the rest. */
static collagec_status shape_reshape(collagec_model *m, const struct rt_shape *sh,
				     const int64_t *t, int n, const int64_t *x, int xr,
				     int64_t *out)
{
	int64_t known = 1, total = 1;
	int minus = -1;

	for (int k = 0; k < xr; k++)
		total *= x[k];
	for (int k = 0; k < n; k++) {
		out[k] = t[k];
		if (t[k] == 0 && !sh->attr) {
			if (k >= xr)
				return fail(m, COLLAGEC_E_SHAPE, "node '%s': 0 at position %d "
					    "copies a dimension the input does not have", sh->node, k);
			out[k] = x[k];
		} else if (t[k] == -1) {
			if (minus >= 0)
				return fail(m, COLLAGEC_E_SHAPE, "node '%s': more than one -1 in "
					    "the target shape", sh->node);
			minus = k;
			continue;
		} else if (t[k] < 0 || t[k] > RT_MAX_BYTES) {
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': target dimension %lld is "
				    "out of range", sh->node, (long long)t[k]);
		}
		if (__builtin_mul_overflow(known, out[k], &known) || known > RT_MAX_BYTES)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': target shape is too large",
				    sh->node);
	}
	if (minus >= 0) {
		if (known == 0 || total % known)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': cannot infer the -1 "
				    "dimension of the target shape", sh->node);
		out[minus] = total / known;
		known = total;
	}
	if (known != total)
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': cannot reshape %lld elements to "
			    "%lld", sh->node, (long long)total, (long long)known);
	return COLLAGEC_OK;
}

/* Expand: numpy broadcasting of the input's dims and the target's. */
static collagec_status shape_expand(collagec_model *m, const struct rt_shape *sh,
				    const int64_t *t, int n, const int64_t *x, int xr,
				    int64_t *out)
{
	int r = n > xr ? n : xr;

	for (int k = 0; k < r; k++) {
		int64_t a = k - (r - xr) >= 0 ? x[k - (r - xr)] : 1;
		int64_t b = k - (r - n) >= 0 ? t[k - (r - n)] : 1;

		if (b < 0 || b > RT_MAX_BYTES || (a != b && a != 1 && b != 1))
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': input cannot be expanded "
				    "to the target shape (dim %d: %lld to %lld)", sh->node, k,
				    (long long)a, (long long)b);
		out[k] = a == 1 ? b : a;
	}
	return COLLAGEC_OK;
}

/* Unsqueeze (ins) or Squeeze: the axes, normalised for rank r, must be distinct. */
static collagec_status shape_axes(collagec_model *m, const struct rt_shape *sh,
				  const int64_t *t, int n, const int64_t *x, int xr, int ins,
				  int64_t *out)
{
	int r = ins ? xr + n : xr, k = 0;
	char hit[RT_MAX_RANK] = { 0 };

	for (int i = 0; i < n; i++) {
		int64_t a = t[i] < 0 ? t[i] + r : t[i];

		if (a < 0 || a >= r || hit[a])
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': axis %lld is out of range "
				    "or repeated", sh->node, (long long)t[i]);
		if (!ins && x[a] != 1)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': cannot squeeze axis %lld "
				    "of size %lld", sh->node, (long long)a, (long long)x[a]);
		hit[a] = 1;
	}
	for (int i = 0; i < r; i++)
		if (ins)
			out[i] = hit[i] ? 1 : x[k++];
		else if (!hit[i])
			out[k++] = x[i];
	return COLLAGEC_OK;
}

/* The number of non-zero elements of value id (-0.0 is zero, NaN is not). */
static int64_t count_nonzero(collagec_model *m, int id, const int64_t *dims, int rank)
{
	const struct rt_value *v = &rt_desc.values[id];
	const unsigned char *p = value_ptr(m, id);
	int64_t n = 1, count = 0;

	for (int k = 0; k < rank; k++)
		n *= dims[k];
	for (int64_t i = 0; i < n; i++, p += v->esize) {
		int nz = 0;

		if (v->dtype == COLLAGEC_FLOAT)
			nz = *(const float *)(const void *)p != 0;
		else if (v->dtype == COLLAGEC_DOUBLE)
			nz = *(const double *)(const void *)p != 0;
		else
			for (int b = 0; b < v->esize; b++)
				nz |= p[b] != 0;
		count += nz;
	}
	return count;
}

/* Element i of integer tensor id (int16, int32 or int64) as int64. */
static int64_t int_at(collagec_model *m, int id, int64_t i)
{
	const void *p = value_ptr(m, id);

	switch (rt_desc.values[id].dtype) {
	case COLLAGEC_INT16: return ((const int16_t *)p)[i];
	case COLLAGEC_INT32: return ((const int32_t *)p)[i];
	default: return ((const int64_t *)p)[i];
	}
}

/* The element count of integer tensor id. */
static int64_t int_count(collagec_model *m, int id)
{
	int64_t d[RT_MAX_RANK], n = 1;

	for (int k = value_dims(m, id, d) - 1; k >= 0; k--)
		n *= d[k];
	return n;
}

/* One axis of a Slice, clamped as ONNX says; its length. */
static int64_t slice_axis(int64_t dim, int64_t b, int64_t e, int64_t step, int64_t *start)
{
	if (b < 0)
		b += dim;
	if (e < 0)
		e += dim;
	if (step > 0) {
		b = b < 0 ? 0 : b > dim ? dim : b;
		e = e < 0 ? 0 : e > dim ? dim : e;
		*start = b;
		return e > b ? (e - b + step - 1) / step : 0;
	}
	b = b < 0 ? 0 : b > dim - 1 ? dim - 1 : b;
	e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
	*start = b;
	return b > e ? (b - e - step - 1) / -step : 0;
}

/* Slice: the output dims, and each axis's start and step into the kernel's symbols. */
static collagec_status shape_slice(collagec_model *m, const struct rt_shape *sh,
				   const int64_t *x, int xr, int64_t *out)
{
	int64_t n = int_count(m, sh->in[1]), start[RT_MAX_RANK], step[RT_MAX_RANK];
	char hit[RT_MAX_RANK] = { 0 };

	if (n != int_count(m, sh->in[2]) || (sh->in[3] >= 0 && int_count(m, sh->in[3]) != n) ||
	    (sh->in[4] >= 0 && int_count(m, sh->in[4]) != n) || n > xr)
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': starts, ends, axes and steps differ "
			    "in length", sh->node);
	for (int k = 0; k < xr; k++) {
		out[k] = x[k];
		start[k] = 0;
		step[k] = 1;
	}
	for (int64_t i = 0; i < n; i++) {
		int64_t a = sh->in[3] >= 0 ? int_at(m, sh->in[3], i) : i;
		int64_t st = sh->in[4] >= 0 ? int_at(m, sh->in[4], i) : 1;

		if (a < 0)
			a += xr;
		if (a < 0 || a >= xr || hit[a])
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': axis %lld is out of range or "
				    "repeated", sh->node, (long long)a);
		if (st == 0 || st == INT64_MIN)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': slice step is %lld", sh->node,
				    (long long)st);
		hit[a] = 1;
		step[a] = st;
		out[a] = slice_axis(x[a], int_at(m, sh->in[1], i), int_at(m, sh->in[2], i), st,
				    &start[a]);
	}
	for (int k = 0; k < xr && sh->param[2 * k] >= 0; k++) {
		m->syms[sh->param[2 * k]] = start[k];
		m->syms[sh->param[2 * k + 1]] = step[k];
	}
	return COLLAGEC_OK;
}

/*
 * Reduce* over axes given at run time: the output dims, and per input axis
 * whether it is reduced and its stride in the output (0 when reduced).
 */
static collagec_status shape_reduce(collagec_model *m, const struct rt_shape *sh,
				    const int64_t *x, int xr, int64_t *out)
{
	int64_t n = int_count(m, sh->in[1]), stride = 1, ystride[RT_MAX_RANK];
	char red[RT_MAX_RANK] = { 0 };
	int keep = sh->attr & 1, r = 0;

	for (int64_t i = 0; i < n; i++) {
		int64_t a = int_at(m, sh->in[1], i);

		if (a < 0)
			a += xr;
		if (a < 0 || a >= xr || red[a])
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': axis %lld is out of range or "
				    "repeated", sh->node, (long long)int_at(m, sh->in[1], i));
		red[a] = 1;
	}
	for (int k = 0; k < xr; k++)
		if (!red[k] || keep)
			out[r++] = red[k] ? 1 : x[k];
	for (int k = xr - 1; k >= 0; k--) {
		ystride[k] = red[k] ? 0 : stride;
		if (!red[k])
			stride *= x[k];
	}
	for (int k = 0; k < xr; k++) {
		m->syms[sh->param[2 * k]] = red[k];
		m->syms[sh->param[2 * k + 1]] = ystride[k];
	}
	return COLLAGEC_OK;
}

/* Element 0 of float tensor id (any of the four float types) as a double. */
static double float_at(collagec_model *m, int id)
{
	const void *p = value_ptr(m, id);

	switch (rt_desc.values[id].dtype) {
	case COLLAGEC_FLOAT: return *(const float *)p;
	case COLLAGEC_FLOAT16: return rt_h2f(*(const uint16_t *)p);
	case COLLAGEC_BFLOAT16: return rt_bf2f(*(const uint16_t *)p);
	default: return *(const double *)p;
	}
}

/* Range: ceil((limit - start) / delta) elements, exact for integers. */
static collagec_status shape_range(collagec_model *m, const struct rt_shape *sh, int64_t *out)
{
	int t = rt_desc.values[sh->in[0]].dtype;

	if (t == COLLAGEC_FLOAT || t == COLLAGEC_DOUBLE || t == COLLAGEC_FLOAT16 ||
	    t == COLLAGEC_BFLOAT16) {
		double a = float_at(m, sh->in[0]), l = float_at(m, sh->in[1]);
		double d = float_at(m, sh->in[2]), c;

		c = ceil((l - a) / d);
		if (d == 0 || !(c < (double)RT_MAX_BYTES))
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': Range(%g, %g, %g) has no "
				    "length the model can take", sh->node, a, l, d);
		out[0] = c > 0 ? (int64_t)c : 0;
	} else {
		int64_t a = int_at(m, sh->in[0], 0), l = int_at(m, sh->in[1], 0);
		int64_t d = int_at(m, sh->in[2], 0), span, c;

		if (d == 0 || __builtin_sub_overflow(l, a, &span))
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': Range(%lld, %lld, %lld) has "
				    "no length the model can take", sh->node, (long long)a,
				    (long long)l, (long long)d);
		c = span / d + (span % d != 0 && (span > 0) == (d > 0));
		out[0] = c > 0 ? c : 0;
	}
	return COLLAGEC_OK;
}

/* Element 0 of numeric tensor id as a double. */
static double num_at(collagec_model *m, int id)
{
	const void *p = value_ptr(m, id);

	switch (rt_desc.values[id].dtype) {
	case COLLAGEC_FLOAT: return *(const float *)p;
	case COLLAGEC_DOUBLE: return *(const double *)p;
	case COLLAGEC_INT8: return *(const int8_t *)p;
	case COLLAGEC_UINT8: return *(const uint8_t *)p;
	case COLLAGEC_INT16: return *(const int16_t *)p;
	case COLLAGEC_UINT16: return *(const uint16_t *)p;
	case COLLAGEC_INT32: return *(const int32_t *)p;
	case COLLAGEC_UINT32: return *(const uint32_t *)p;
	case COLLAGEC_UINT64: return (double)*(const uint64_t *)p;
	default: return (double)*(const int64_t *)p;
	}
}

/* OneHot: the indices' dims with the depth (truncated) inserted at axis. */
static collagec_status shape_one_hot(collagec_model *m, const struct rt_shape *sh,
				     const int64_t *x, int xr, int64_t *out)
{
	double depth = num_at(m, sh->in[1]);
	int axis = (int)(sh->attr < 0 ? sh->attr + xr + 1 : sh->attr);

	if (!(depth >= 1 && depth < (double)RT_MAX_BYTES))
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': depth %g is out of range", sh->node,
			    depth);
	for (int k = 0, j = 0; k <= xr; k++)
		out[k] = k == axis ? (int64_t)depth : x[j++];
	return COLLAGEC_OK;
}

/* Compress: the input's dims (or its count) with the selected count on the axis. */
static collagec_status shape_compress(collagec_model *m, const struct rt_shape *sh,
				      const int64_t *x, int xr, int64_t *out)
{
	const unsigned char *c = value_ptr(m, sh->in[1]);
	int64_t len = int_count(m, sh->in[1]), dim = 1, count = 0;
	int axis = (int)sh->attr;

	for (int k = 0; k < xr; k++) {
		out[k] = x[k];
		dim *= axis < 0 || k == axis ? x[k] : 1;
	}
	for (int64_t j = 0; j < len && j < dim; j++)
		count += c[j] != 0;
	out[axis < 0 ? 0 : axis] = count;
	return COLLAGEC_OK;
}

/* TopK: the input's dims with k on the axis (0 <= k <= its length). */
static collagec_status shape_top_k(collagec_model *m, const struct rt_shape *sh,
				   const int64_t *x, int xr, int64_t *out)
{
	int64_t k = int_at(m, sh->in[1], 0);

	for (int i = 0; i < xr; i++)
		out[i] = x[i];
	if (k < 0 || k > x[sh->attr])
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': k = %lld is out of range for axis "
			    "%d", sh->node, (long long)k, (int)sh->attr);
	out[sh->attr] = k;
	return COLLAGEC_OK;
}

/* Pad: each axis plus its pads (all axes, or those of the axes input). */
static collagec_status shape_pad(collagec_model *m, const struct rt_shape *sh,
				 const int64_t *x, int xr, int64_t *out)
{
	int64_t np = int_count(m, sh->in[1]), na = sh->in[3] >= 0 ? int_count(m, sh->in[3]) : xr;
	int64_t pb[RT_MAX_RANK] = { 0 }, pe[RT_MAX_RANK] = { 0 };

	if (np != 2 * na || na > xr)
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': %lld pads for %lld axes", sh->node,
			    (long long)np, (long long)na);
	for (int64_t i = 0; i < na; i++) {
		int64_t a = sh->in[3] >= 0 ? int_at(m, sh->in[3], i) : i;

		if (a < 0)
			a += xr;
		if (a < 0 || a >= xr)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': axis %lld is out of range",
				    sh->node, (long long)int_at(m, sh->in[3], i));
		pb[a] = int_at(m, sh->in[1], i);
		pe[a] = int_at(m, sh->in[1], i + na);
	}
	for (int k = 0; k < xr; k++) {
		if (pb[k] < -RT_MAX_BYTES || pb[k] > RT_MAX_BYTES || pe[k] < -RT_MAX_BYTES ||
		    pe[k] > RT_MAX_BYTES || x[k] + pb[k] + pe[k] < 0 ||
		    (sh->attr && x[k] == 0 && (pb[k] || pe[k])))
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': pads on axis %d give an "
				    "invalid length", sh->node, k);
		out[k] = x[k] + pb[k] + pe[k];
		m->syms[sh->param[2 * k]] = pb[k];
		m->syms[sh->param[2 * k + 1]] = pe[k];
	}
	return COLLAGEC_OK;
}

/* Element i of float or double tensor id. */
static double flt_at(collagec_model *m, int id, int64_t i)
{
	const void *p = value_ptr(m, id);

	return rt_desc.values[id].dtype == COLLAGEC_DOUBLE ? ((const double *)p)[i]
		: ((const float *)p)[i];
}

/*
 * Resize or Upsample with scales or sizes known only at run time: each
 * listed axis becomes floor(length * scale) (times the roi's extent under
 * tf_crop_and_resize), or its size; under keep_aspect_ratio_policy one
 * scale, the smallest or largest sizes[i] / length, rounded half up.
 */
static collagec_status shape_resize(collagec_model *m, const struct rt_shape *sh,
				    const int64_t *x, int xr, int64_t *out)
{
	int crop = sh->attr & 1, keep = sh->attr >> 1 & 3, old = sh->attr >> 3 & 1;
	int na = sh->attr >> 4 & 15, sc = old ? sh->in[1] : sh->in[2];
	int sz = old ? -1 : sh->in[3], roi = old ? -1 : sh->in[1], axes[RT_MAX_RANK];
	double ks = 0;

	if (sc >= 0 && int_count(m, sc) == 0)
		sc = -1;
	if (sz >= 0 && int_count(m, sz) == 0)
		sz = -1;
	if ((sc >= 0) == (sz >= 0))
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': exactly one of scales and sizes "
			    "must be given", sh->node);
	if (int_count(m, sc >= 0 ? sc : sz) != na)
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': %s has %lld values for %d axes",
			    sh->node, sc >= 0 ? "scales" : "sizes",
			    (long long)int_count(m, sc >= 0 ? sc : sz), na);
	if (crop && (roi < 0 || int_count(m, roi) != 2 * na))
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': roi must have %d values", sh->node,
			    2 * na);
	for (int k = 0; k < xr; k++)
		out[k] = x[k];
	for (int i = 0; i < na; i++) {
		axes[i] = (int)(sh->attr >> (8 + 4 * i) & 15);
		if (sz >= 0 && keep) {
			double s = (double)int_at(m, sz, i) / (double)x[axes[i]];

			if (i == 0 || (keep == 1 ? s < ks : s > ks))
				ks = s;
		}
	}
	for (int i = 0; i < na; i++) {
		int a = axes[i];
		double len;

		if (sz >= 0) {
			len = keep ? floor(ks * (double)x[a] + 0.5) : (double)int_at(m, sz, i);
		} else {
			double s = flt_at(m, sc, i);

			if (!(s > 0))
				return fail(m, COLLAGEC_E_SHAPE, "node '%s': scale %g is not positive",
					    sh->node, s);
			len = (double)x[a] * s;
			if (crop)
				len *= flt_at(m, roi, i + na) - flt_at(m, roi, i);
			len = floor(len);
		}
		if (!(len >= 0 && len < (double)RT_MAX_BYTES) || (x[a] == 0 && len != 0))
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': cannot resize axis %d from "
				    "%lld to %g", sh->node, a, (long long)x[a], len);
		out[a] = (int64_t)len;
	}
	return COLLAGEC_OK;
}

/*
 * Split by sizes known only at run time: non-negative, adding up to the
 * axis; binds every output's length (param), output 0's through its dims.
 */
static collagec_status shape_split(collagec_model *m, const struct rt_shape *sh,
				   const int64_t *x, int xr, int64_t *out)
{
	int axis = (int)sh->attr, n = 0;
	int64_t sum = 0;

	for (; n < 2 * RT_MAX_RANK && sh->param[n] >= 0; n++)
		;
	if (int_count(m, sh->in[1]) != n)
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': split has %lld sizes for %d outputs",
			    sh->node, (long long)int_count(m, sh->in[1]), n);
	for (int i = 0; i < n; i++) {
		int64_t v = int_at(m, sh->in[1], i);

		if (v < 0 || v > RT_MAX_BYTES)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': split size %lld is out of "
				    "range", sh->node, (long long)v);
		sum += v;
	}
	if (sum != x[axis])
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': split sizes add up to %lld, not the "
			    "axis length %lld", sh->node, (long long)sum, (long long)x[axis]);
	for (int i = 1; i < n; i++)
		m->syms[sh->param[i]] = int_at(m, sh->in[1], i);
	for (int k = 0; k < xr; k++)
		out[k] = x[k];
	out[axis] = int_at(m, sh->in[1], 0);
	return COLLAGEC_OK;
}

/*
 * STFT with frame_step or frame_length known only at run time: [batch,
 * frames, bins, 2]; binds the step and frame length (param) for the kernel.
 */
static collagec_status shape_stft(collagec_model *m, const struct rt_shape *sh,
				  const int64_t *x, int xr, int64_t *out)
{
	int64_t step = int_at(m, sh->in[1], 0), fl;
	int64_t wl = sh->in[2] >= 0 ? int_count(m, sh->in[2]) : -1;

	fl = sh->in[3] >= 0 ? int_at(m, sh->in[3], 0) : wl;
	if (xr != 3 || fl < 1 || fl > x[1] || step < 1 || (wl >= 0 && wl != fl))
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': frame_length %lld (from frame_length "
			    "or the window) must be in [1, %lld] and frame_step %lld positive",
			    sh->node, (long long)fl, (long long)x[1], (long long)step);
	if (sh->attr && x[2] == 2)
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': a onesided STFT needs a real signal",
			    sh->node);
	out[0] = x[0];
	out[1] = (x[1] - fl) / step + 1;
	out[2] = sh->attr ? fl / 2 + 1 : fl;
	out[3] = 2;
	m->syms[sh->param[0]] = step;
	m->syms[sh->param[1]] = fl;
	return COLLAGEC_OK;
}

/*
 * CenterCropPad with the target shape known only at run time: each listed
 * axis (ints) takes its length from shape; binds its start in the input
 * (param), (in - out) / 2 truncated: negative where the axis is padded,
 * the odd element of a crop or a pad at the end.
 */
static collagec_status shape_center_crop_pad(collagec_model *m, const struct rt_shape *sh,
					     const int64_t *x, int xr, int64_t *out)
{
	int na = (int)sh->ints[0];

	if (int_count(m, sh->in[1]) != na)
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': shape has %lld values for %d axes",
			    sh->node, (long long)int_count(m, sh->in[1]), na);
	for (int k = 0; k < xr; k++)
		out[k] = x[k];
	for (int i = 0; i < na; i++) {
		int a = (int)sh->ints[1 + i];
		int64_t len = int_at(m, sh->in[1], i);

		if (len < 0 || len > RT_MAX_BYTES)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': target length %lld on axis %d "
				    "is out of range", sh->node, (long long)len, a);
		out[a] = len;
		m->syms[sh->param[i]] = (x[a] - len) / 2;
	}
	return COLLAGEC_OK;
}

/*
 * Col2Im with image_shape or block_shape known only at run time: [N, C,
 * image...] from input [N, C * block elements, blocks]; binds per spatial
 * axis the block's length and the count of blocks along it (param).
 */
static collagec_status shape_col2im(collagec_model *m, const struct rt_shape *sh,
				    const int64_t *x, int xr, int64_t *out)
{
	int r = (int)sh->ints[0];
	const int64_t *st = sh->ints + 1, *dil = st + r, *pad = dil + r;
	int64_t bsz = 1, l = 1;
	int fits = 1;

	if (int_count(m, sh->in[1]) != r || int_count(m, sh->in[2]) != r || xr != 3)
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': image_shape and block_shape must "
			    "have %d values", sh->node, r);
	for (int i = 0; i < r; i++) {
		int64_t img = int_at(m, sh->in[1], i), blk = int_at(m, sh->in[2], i), span;

		if (img < 1 || img > RT_MAX_BYTES || blk < 1 || blk > RT_MAX_BYTES)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': image_shape[%d] = %lld or "
				    "block_shape[%d] = %lld is out of range", sh->node, i,
				    (long long)img, i, (long long)blk);
		if (__builtin_mul_overflow(dil[i], blk - 1, &span) ||
		    (span = img + pad[i] + pad[r + i] - span - 1) < 0)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': a block of %lld (dilation %lld) "
				    "does not fit image_shape[%d] = %lld with its pads", sh->node,
				    (long long)blk, (long long)dil[i], i, (long long)img);
		if (__builtin_mul_overflow(bsz, blk, &bsz) || bsz > x[1] ||
		    __builtin_mul_overflow(l, span / st[i] + 1, &l) || l > x[2]) {
			fits = 0;
			break;
		}
		m->syms[sh->param[2 * i]] = blk;
		m->syms[sh->param[2 * i + 1]] = span / st[i] + 1;
		out[2 + i] = img;
	}
	if (!fits || x[1] % bsz || l != x[2])
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': input [%lld, %lld, %lld] does not hold "
			    "whole blocks of these shapes", sh->node, (long long)x[0],
			    (long long)x[1], (long long)x[2]);
	out[0] = x[0];
	out[1] = x[1] / bsz;
	return COLLAGEC_OK;
}

/*
 * DFT with the axis or dft_length known only at run time: X's dims with
 * the output length on the axis (the transform length, or half of it plus
 * one when onesided, the whole under an inverse onesided one) and 2, or
 * 1 for an inverse onesided one, last; binds the axis, the transform
 * length and X's length on the axis (param).
 */
static collagec_status shape_dft(collagec_model *m, const struct rt_shape *sh,
				 const int64_t *x, int xr, int64_t *out)
{
	int inverse = sh->attr & 1, onesided = sh->attr >> 1 & 1;
	int64_t axis = sh->in[2] >= 0 ? int_at(m, sh->in[2], 0) : sh->ints[0], a, n;

	a = axis < 0 ? axis + xr : axis;
	if (a < 0 || a >= xr - 1)
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': axis %lld is out of range for rank %d "
			    "(the last axis holds the real and imaginary parts)", sh->node,
			    (long long)axis, xr);
	n = sh->in[1] >= 0 ? int_at(m, sh->in[1], 0) : inverse && onesided ? 2 * (x[a] - 1)
		: x[a];
	if (n < 1 || n > RT_MAX_BYTES)
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': dft_length %lld is out of range",
			    sh->node, (long long)n);
	for (int k = 0; k < xr; k++)
		out[k] = x[k];
	out[a] = onesided && !inverse ? n / 2 + 1 : n;
	out[xr - 1] = onesided && inverse ? 1 : 2;
	m->syms[sh->param[0]] = a;
	m->syms[sh->param[1]] = n;
	m->syms[sh->param[2]] = x[a];
	return COLLAGEC_OK;
}

/*
 * AffineGrid with size known only at run time: [N, H, W, 2] from size [N,
 * C, H, W], or [N, D, H, W, 3] from [N, C, D, H, W]; N must be theta's.
 */
static collagec_status shape_affine_grid(collagec_model *m, const struct rt_shape *sh,
					 const int64_t *x, int64_t *out)
{
	int cnt = (int)int_count(m, sh->in[1]);

	if (int_at(m, sh->in[1], 0) != x[0])
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': size[0] = %lld differs from theta's "
			    "batch %lld", sh->node, (long long)int_at(m, sh->in[1], 0),
			    (long long)x[0]);
	for (int i = 1; i < cnt; i++) {
		int64_t v = int_at(m, sh->in[1], i);

		if (v < 1 || v > RT_MAX_BYTES)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': size[%d] = %lld is out of range",
				    sh->node, i, (long long)v);
		if (i >= 2)
			out[i - 1] = v;
	}
	out[0] = x[0];
	out[cnt - 1] = cnt - 2;
	return COLLAGEC_OK;
}

/*
 * Whether slices a and b of x (count of them, size elements each, inner the
 * stride of the axis) are equal: element by element, == for the floats
 * (float16 and bfloat16 widened: so -0.0 equals 0.0 and NaN nothing), else
 * bytes, as the kernel compares.
 */
static int elem_equal(int dtype, const unsigned char *pa, const unsigned char *pb, int esize)
{
	switch (dtype) {
	case COLLAGEC_FLOAT:
		return *(const float *)(const void *)pa == *(const float *)(const void *)pb;
	case COLLAGEC_DOUBLE:
		return *(const double *)(const void *)pa == *(const double *)(const void *)pb;
	case COLLAGEC_FLOAT16:
		return rt_h2f(*(const uint16_t *)(const void *)pa) ==
		       rt_h2f(*(const uint16_t *)(const void *)pb);
	case COLLAGEC_BFLOAT16:
		return rt_bf2f(*(const uint16_t *)(const void *)pa) ==
		       rt_bf2f(*(const uint16_t *)(const void *)pb);
	default:
		return memcmp(pa, pb, (size_t)esize) == 0;
	}
}

static int slices_equal(collagec_model *m, int id, int64_t count, int64_t size, int64_t inner,
			int64_t a, int64_t b)
{
	const struct rt_value *v = &rt_desc.values[id];
	const unsigned char *p = value_ptr(m, id);

	for (int64_t t = 0; t < size; t++) {
		int64_t o = t / inner * count, r = t % inner;
		const unsigned char *pa = p + ((o + a) * inner + r) * v->esize;
		const unsigned char *pb = p + ((o + b) * inner + r) * v->esize;

		if (!elem_equal(v->dtype, pa, pb, v->esize))
			return 0;
	}
	return 1;
}

/* Unique: the input's dims (or its count) with the number of distinct slices on the axis. */
static collagec_status shape_unique(collagec_model *m, const struct rt_shape *sh,
				    const int64_t *x, int xr, int64_t *out)
{
	int axis = (int)sh->attr;
	int64_t all = 1, count, size, inner = 1, u = 0;

	for (int k = 0; k < xr; k++) {
		all *= x[k];
		out[k] = x[k];
		if (axis >= 0 && k > axis)
			inner *= x[k];
	}
	count = axis < 0 ? all : x[axis];
	size = axis < 0 || count == 0 ? 1 : all / count;
	if (axis < 0)
		inner = 1;
	for (int64_t i = 0; i < count; i++) {
		int64_t j = 0;

		while (j < i && !slices_equal(m, sh->in[0], axis < 0 ? 1 : count, size, inner, j, i))
			j++;
		u += j == i;
	}
	out[axis < 0 ? 0 : axis] = u;
	return COLLAGEC_OK;
}

/*
 * Whether box a suppresses box b under NonMaxSuppression (boxes of 4 floats:
 * corners y1, x1, y2, x2 or, center, x, y, w, h): their IoU exceeds t.
 * Computed in float in the order the kernel computes it.
 */
static int nms_suppress(const float *a, const float *b, int center, float t)
{
	float ay0, ax0, ay1, ax1, by0, bx0, by1, bx1, iw, ih, inter, aa, ab, uni;

	if (center) {
		ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2, ay0 = a[1] - a[3] / 2;
		ay1 = a[1] + a[3] / 2, bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2;
		by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;
	} else {
		ay0 = fminf(a[0], a[2]), ay1 = fmaxf(a[0], a[2]), ax0 = fminf(a[1], a[3]);
		ax1 = fmaxf(a[1], a[3]), by0 = fminf(b[0], b[2]), by1 = fmaxf(b[0], b[2]);
		bx0 = fminf(b[1], b[3]), bx1 = fmaxf(b[1], b[3]);
	}
	iw = fmaxf(0.0f, fminf(ax1, bx1) - fmaxf(ax0, bx0));
	ih = fmaxf(0.0f, fminf(ay1, by1) - fmaxf(ay0, by0));
	inter = iw * ih;
	aa = (ax1 - ax0) * (ay1 - ay0);
	ab = (bx1 - bx0) * (by1 - by0);
	uni = aa + ab - inter;
	return inter > 0 && aa > 0 && ab > 0 && uni > 0 && inter / uni > t;
}

/*
 * NonMaxSuppression: [selected, 3]. Per batch and class, the boxes scoring
 * above score_threshold in decreasing score (the lower index first on a
 * tie), each kept unless it overlaps one kept before it by more than
 * iou_threshold, at most max_output_boxes_per_class. The kernel runs the
 * same selection.
 */
static collagec_status shape_nms(collagec_model *m, const struct rt_shape *sh, int64_t *out)
{
	int64_t bd[RT_MAX_RANK], sd[RT_MAX_RANK], total = 0, *kept;
	const float *boxes = value_ptr(m, sh->in[0]), *scores = value_ptr(m, sh->in[1]);
	int64_t maxout = sh->in[2] >= 0 && int_count(m, sh->in[2]) ? int_at(m, sh->in[2], 0) : 0;
	float iou = sh->in[3] >= 0 && int_count(m, sh->in[3]) ? (float)flt_at(m, sh->in[3], 0) : 0;
	int has_st = sh->in[4] >= 0 && int_count(m, sh->in[4]) > 0;
	float st = has_st ? (float)flt_at(m, sh->in[4], 0) : 0;

	if (value_dims(m, sh->in[0], bd) != 3 || value_dims(m, sh->in[1], sd) != 3 ||
	    bd[2] != 4 || sd[0] != bd[0] || sd[2] != bd[1])
		return fail(m, COLLAGEC_E_SHAPE, "node '%s': boxes must be [B, N, 4] and scores "
			    "[B, C, N]", sh->node);
	kept = malloc(sizeof(*kept) * (size_t)(sd[2] + 1));
	if (!kept)
		return fail(m, COLLAGEC_E_ALLOC, "node '%s': out of memory", sh->node);
	for (int64_t b = 0; b < bd[0]; b++)
		for (int64_t c = 0; c < sd[1]; c++) {
			const float *s = scores + (b * sd[1] + c) * sd[2];
			int64_t last = -1, n = 0;

			for (int64_t r = 0; r < sd[2] && n < maxout; r++) {
				int64_t best = -1, keep = 1;

				for (int64_t i = 0; i < sd[2]; i++)
					if ((!has_st || s[i] > st) &&
					    (last < 0 || s[i] < s[last] || (s[i] == s[last] && i > last)) &&
					    (best < 0 || s[i] > s[best]))
						best = i;
				if (best < 0)
					break;
				last = best;
				for (int64_t q = 0; q < n && keep; q++)
					keep = !nms_suppress(boxes + (b * bd[1] + kept[q]) * 4,
							     boxes + (b * bd[1] + best) * 4, (int)sh->attr, iou);
				if (keep)
					kept[n++] = best;
			}
			total += n;
		}
	free(kept);
	out[0] = total;
	out[1] = 3;
	return COLLAGEC_OK;
}

/* The output dims of shape function sh; rank is the output's. */
static collagec_status shape_dims(collagec_model *m, const struct rt_shape *sh, int64_t *out)
{
	int64_t x[RT_MAX_RANK], td[RT_MAX_RANK], n = 1;
	const int64_t *t = sh->in[1] >= 0 ? value_ptr(m, sh->in[1]) : NULL;
	int xr = sh->in[0] >= 0 ? value_dims(m, sh->in[0], x) : 0;

	for (int k = sh->in[1] >= 0 ? value_dims(m, sh->in[1], td) - 1 : -1; k >= 0; k--)
		n *= td[k];
	switch (sh->op) {
	case RT_SHAPE_SLICE:
		return shape_slice(m, sh, x, xr, out);
	case RT_SHAPE_REDUCE:
		return shape_reduce(m, sh, x, xr, out);
	case RT_SHAPE_RANGE:
		return shape_range(m, sh, out);
	case RT_SHAPE_ONE_HOT:
		return shape_one_hot(m, sh, x, xr, out);
	case RT_SHAPE_COMPRESS:
		return shape_compress(m, sh, x, xr, out);
	case RT_SHAPE_TOP_K:
		return shape_top_k(m, sh, x, xr, out);
	case RT_SHAPE_PAD:
		return shape_pad(m, sh, x, xr, out);
	case RT_SHAPE_RESIZE:
		return shape_resize(m, sh, x, xr, out);
	case RT_SHAPE_SPLIT:
		return shape_split(m, sh, x, xr, out);
	case RT_SHAPE_STFT:
		return shape_stft(m, sh, x, xr, out);
	case RT_SHAPE_UNIQUE:
		return shape_unique(m, sh, x, xr, out);
	case RT_SHAPE_NMS:
		return shape_nms(m, sh, out);
	case RT_SHAPE_CENTER_CROP_PAD:
		return shape_center_crop_pad(m, sh, x, xr, out);
	case RT_SHAPE_COL2IM:
		return shape_col2im(m, sh, x, xr, out);
	case RT_SHAPE_DFT:
		return shape_dft(m, sh, x, xr, out);
	case RT_SHAPE_AFFINE_GRID:
		return shape_affine_grid(m, sh, x, out);
	case RT_SHAPE_IMAGE_DECODER:
		return shape_image(m, sh, x, out);
	case RT_SHAPE_MEL_WEIGHT_MATRIX:
		/* [dft_length / 2 + 1, num_mel_bins] */
		out[0] = int_at(m, sh->in[1], 0) / 2 + 1;
		out[1] = int_at(m, sh->in[0], 0);
		if (out[0] < 1 || out[0] > RT_MAX_BYTES || out[1] < 0 || out[1] > RT_MAX_BYTES ||
		    num_at(m, sh->in[2]) <= 0)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': num_mel_bins %lld, dft_length "
				    "%lld or sample_rate %g is out of range", sh->node,
				    (long long)out[1], (long long)int_at(m, sh->in[1], 0),
				    num_at(m, sh->in[2]));
		return COLLAGEC_OK;
	case RT_SHAPE_MAX_UNPOOL:
		/* output_shape as given; N and C are checked on binding */
		for (int k = 0; k < xr; k++) {
			out[k] = int_at(m, sh->in[2], k);
			if (out[k] < 0 || out[k] > RT_MAX_BYTES)
				return fail(m, COLLAGEC_E_SHAPE, "node '%s': output_shape[%d] = %lld "
					    "is out of range", sh->node, k, (long long)out[k]);
		}
		return COLLAGEC_OK;
	case RT_SHAPE_WINDOW:
		/* HannWindow and the others: [size] */
		out[0] = int_at(m, sh->in[0], 0);
		if (out[0] < 0 || out[0] > RT_MAX_BYTES)
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': size %lld is out of range",
				    sh->node, (long long)out[0]);
		return COLLAGEC_OK;
	case RT_SHAPE_STRING_NORMALIZER: {
		/* [C'] or [1, C']: the strings kept, or one "" when none is */
		int64_t c = rt_str_kept(value_ptr(m, sh->in[0]), x[xr - 1], value_ptr(m, sh->in[1]),
					td[0], (int)sh->attr);

		out[0] = 1;
		out[xr - 1] = c ? c : 1;
		return COLLAGEC_OK;
	}
	case RT_SHAPE_STRING_SPLIT: {
		/* X's dims, then the most pieces a string splits into */
		int64_t e = 1;

		for (int k = 0; k < xr; k++) {
			out[k] = x[k];
			e *= x[k];
		}
		out[xr] = rt_str_split_max(value_ptr(m, sh->in[0]), e,
					   ((const char *const *)value_ptr(m, sh->in[1]))[0], sh->attr);
		return COLLAGEC_OK;
	}
	case RT_SHAPE_NONZERO:
		out[0] = xr;
		out[1] = count_nonzero(m, sh->in[0], x, xr);
		return COLLAGEC_OK;
	case RT_SHAPE_RESHAPE:
		return shape_reshape(m, sh, t, (int)n, x, xr, out);
	case RT_SHAPE_EXPAND:
		return shape_expand(m, sh, t, (int)n, x, xr, out);
	case RT_SHAPE_CONSTANT_OF_SHAPE:
		return shape_expand(m, sh, t, (int)n, x, 0, out);
	case RT_SHAPE_TILE:
		for (int k = 0; k < xr; k++)
			if (t[k] < 0 || __builtin_mul_overflow(x[k], t[k], &out[k]) ||
			    out[k] > RT_MAX_BYTES)
				return fail(m, COLLAGEC_E_SHAPE, "node '%s': repeat %lld on axis "
					    "%d is out of range", sh->node, (long long)t[k], k);
		return COLLAGEC_OK;
	case RT_SHAPE_UNSQUEEZE:
	case RT_SHAPE_SQUEEZE:
		return shape_axes(m, sh, t, (int)n, x, xr, sh->op == RT_SHAPE_UNSQUEEZE, out);
	default:
		rt_desc.rt_abort("corrupt shape table");
	}
	return COLLAGEC_E_RUNTIME;
}

/* Binds the output's data symbols to dims (or checks the dims already bound). */
static collagec_status shape_bind(collagec_model *m, const struct rt_shape *sh,
				  const int64_t *dims)
{
	const struct rt_value *v = &rt_desc.values[sh->out];

	for (int k = 0; k < v->rank; k++) {
		const struct rt_dim *d = &v->dims[k];

		if (d->n == 1 && d->c == 1 && m->syms[d->sym[0]] < 0)
			m->syms[d->sym[0]] = dims[k];
		else if (!dim_bound(d, m->syms) || dim_eval(d, m->syms) != dims[k])
			return fail(m, COLLAGEC_E_SHAPE, "node '%s': output dimension %d is %lld, "
				    "which the model cannot take", sh->node, k, (long long)dims[k]);
	}
	return COLLAGEC_OK;
}

/*
 * Before step i: runs its shape functions (from *next on), then gives every
 * value with data-dependent dims that step i writes first its block (from
 * rt_late[*late] on).
 */
static collagec_status run_shapes(collagec_model *m, int i, int *next, int *late)
{
	collagec_status s;
	int ran = 0;

	for (; rt_desc.shapes[*next].step == i; (*next)++, ran = 1) {
		int64_t dims[RT_MAX_RANK];

		if (rt_desc.shapes[*next].op == RT_SHAPE_LOOP) {
			if ((s = loop_shape(m, &rt_desc.shapes[*next])) != COLLAGEC_OK)
				return s;
			continue;
		}
		if ((s = shape_dims(m, &rt_desc.shapes[*next], dims)) != COLLAGEC_OK ||
		    (s = shape_bind(m, &rt_desc.shapes[*next], dims)) != COLLAGEC_OK)
			return s;
	}
	if (ran && ((s = derive(m)) != COLLAGEC_OK || (s = check(m)) != COLLAGEC_OK))
		return s;
	for (; rt_desc.late[*late] >= 0 && rt_desc.values[rt_desc.late[*late]].first == i;
	     (*late)++) {
		int id = rt_desc.late[*late];
		const struct rt_value *v = &rt_desc.values[id];
		int64_t bytes;

		bytes = value_bytes(v, m->syms);
		if (bytes == RT_OVERFLOW)
			return fail(m, COLLAGEC_E_SHAPE, "tensor '%s' is too large for these "
				    "inputs", v->name);
		if (v->kind == RT_OUTPUT) {
			collagec_status s = out_place(m, v->io, bytes, v);

			if (s != COLLAGEC_OK)
				return s;
		} else if (grow(m, &m->dyn[id], &m->dyn_cap[id], bytes, v)) {
			return COLLAGEC_E_ALLOC;
		}
	}
	return COLLAGEC_OK;
}
