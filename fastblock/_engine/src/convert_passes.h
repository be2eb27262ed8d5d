/* The three passes of a conversion over a piece of a run (convert.c):
   load the source into v (the compute type), scale and offset into v
   (from v, or from a source already of the compute type), store v into
   the result. Included twice by convert.c: once portable,
   once with FB_CV_ATTR targeting AVX2 (the compiler vectorises the same
   loops 8 floats wide); FB_CV_NAME(x) names each variant's functions.
   Included without them (ci/c_warnings.sh), it defines nothing. */
#ifdef FB_CV_NAME

/* Items move by memcpy: sources and results may be unaligned. */
#define FB_CV_LOAD(T, NAME, CT, EXPR)                                                         \
    static FB_CV_ATTR void FB_CV_NAME(NAME)(CT *v, const char *src, fb_intp n) {             \
        fb_intp i;                                                                          \
        for (i = 0; i < n; i++) {                                                           \
            T x;                                                                            \
            memcpy(&x, src + i * (fb_intp)sizeof(T), sizeof(T));                              \
            v[i] = (EXPR);                                                                  \
        }                                                                                   \
    }

#define FB_CV_LOADS(CT, SUF)                                                                  \
    FB_CV_LOAD(uint8_t, load_bool_##SUF, CT, (CT)(x != 0))                                   \
    FB_CV_LOAD(uint8_t, load_u8_##SUF, CT, (CT)x)                                            \
    FB_CV_LOAD(int8_t, load_i8_##SUF, CT, (CT)x)                                             \
    FB_CV_LOAD(uint16_t, load_u16_##SUF, CT, (CT)x)                                          \
    FB_CV_LOAD(int16_t, load_i16_##SUF, CT, (CT)x)                                           \
    FB_CV_LOAD(uint32_t, load_u32_##SUF, CT, (CT)x)                                          \
    FB_CV_LOAD(int32_t, load_i32_##SUF, CT, (CT)x)                                           \
    FB_CV_LOAD(uint64_t, load_u64_##SUF, CT, (CT)x)                                          \
    FB_CV_LOAD(int64_t, load_i64_##SUF, CT, (CT)x)                                           \
    FB_CV_LOAD(uint16_t, load_bf16_##SUF, CT, (CT)cv_f32_from_bf16(x))                       \
    FB_CV_LOAD(float, load_f32_##SUF, CT, (CT)x)                                             \
    FB_CV_LOAD(double, load_f64_##SUF, CT, (CT)x)

FB_CV_LOADS(float, f32)
FB_CV_LOADS(double, f64)
FB_CV_LOAD(uint16_t, load_f16_f32, float, cv_f32_from_f16(x))
FB_CV_LOAD(uint16_t, load_f16_f64, double, cv_f64_from_f16(x))

/* v = x * scale, then v = v + offset, each rounded: the nine ways the two
   are given (none, one value, one per item). In place (affine_*: x is v)
   or from a source of the compute type into v (affine_from_*: the two
   apart, __restrict, so that neither loop needs the compiler's run-time
   check for overlap). */
#define FB_CV_AFFINE_LOOP(X, SCALED, OFFSET)                                                \
    for (i = 0; i < n; i++) {                                                               \
        t = X[i];                                                                           \
        SCALED;                                                                             \
        OFFSET;                                                                             \
        v[i] = t;                                                                           \
    }

#define FB_CV_AFFINE(CT, NAME, X, ...)                                                      \
    static FB_CV_ATTR void FB_CV_NAME(NAME)(__VA_ARGS__, fb_intp n, const CT *s, int sm,    \
                                            const CT *o, int om) {                          \
        fb_intp i;                                                                          \
        CT t, s0 = sm == FB_AFFINE_VALUE ? s[0] : 0, o0 = om == FB_AFFINE_VALUE ? o[0] : 0; \
        switch (sm * 3 + om) {                                                              \
        case FB_AFFINE_NONE * 3 + FB_AFFINE_VALUE: FB_CV_AFFINE_LOOP(X, , t = t + o0) break; \
        case FB_AFFINE_NONE * 3 + FB_AFFINE_LINE: FB_CV_AFFINE_LOOP(X, , t = t + o[i]) break; \
        case FB_AFFINE_VALUE * 3 + FB_AFFINE_NONE: FB_CV_AFFINE_LOOP(X, t = t * s0, ) break; \
        case FB_AFFINE_VALUE * 3 + FB_AFFINE_VALUE:                                         \
            FB_CV_AFFINE_LOOP(X, t = t * s0, t = t + o0) break;                             \
        case FB_AFFINE_VALUE * 3 + FB_AFFINE_LINE:                                          \
            FB_CV_AFFINE_LOOP(X, t = t * s0, t = t + o[i]) break;                           \
        case FB_AFFINE_LINE * 3 + FB_AFFINE_NONE: FB_CV_AFFINE_LOOP(X, t = t * s[i], ) break; \
        case FB_AFFINE_LINE * 3 + FB_AFFINE_VALUE:                                          \
            FB_CV_AFFINE_LOOP(X, t = t * s[i], t = t + o0) break;                           \
        case FB_AFFINE_LINE * 3 + FB_AFFINE_LINE:                                           \
            FB_CV_AFFINE_LOOP(X, t = t * s[i], t = t + o[i]) break;                         \
        default: break;                                                                     \
        }                                                                                   \
    }

FB_CV_AFFINE(float, affine_f32, v, float *v)
FB_CV_AFFINE(double, affine_f64, v, double *v)
FB_CV_AFFINE(float, affine_from_f32, x, float *__restrict v, const float *__restrict x)
FB_CV_AFFINE(double, affine_from_f64, x, double *__restrict v, const double *__restrict x)

/* Packed results go by a loop of their own (vectorised); others item by item. */
#define FB_CV_STORE(T, NAME, CT, EXPR)                                                        \
    static FB_CV_ATTR void FB_CV_NAME(NAME)(char *dst, fb_intp step, const CT *v, fb_intp n) { \
        fb_intp i;                                                                          \
        if (step == (fb_intp)sizeof(T)) {                                                   \
            for (i = 0; i < n; i++) {                                                       \
                CT x = v[i];                                                                \
                T y = (EXPR);                                                               \
                memcpy(dst + i * (fb_intp)sizeof(T), &y, sizeof(T));                        \
            }                                                                               \
        } else {                                                                            \
            for (i = 0; i < n; i++) {                                                       \
                CT x = v[i];                                                                \
                T y = (EXPR);                                                               \
                memcpy(dst + i * step, &y, sizeof(T));                                      \
            }                                                                               \
        }                                                                                   \
    }

FB_CV_STORE(uint16_t, store_f32_f16, float, cv_f16_from_f32(x))
FB_CV_STORE(uint16_t, store_f32_bf16, float, cv_bf16_from_f32(x))
FB_CV_STORE(float, store_f32_f32, float, x)
FB_CV_STORE(uint8_t, store_f32_u8, float, (uint8_t)(int32_t)cv_saturate(x, 0.0f, 255.0f))
FB_CV_STORE(int8_t, store_f32_i8, float, (int8_t)(int32_t)cv_saturate(x, -128.0f, 127.0f))
FB_CV_STORE(uint16_t, store_f32_u16, float, (uint16_t)(int32_t)cv_saturate(x, 0.0f, 65535.0f))
FB_CV_STORE(int16_t, store_f32_i16, float, (int16_t)(int32_t)cv_saturate(x, -32768.0f, 32767.0f))
FB_CV_STORE(uint16_t, store_f64_f16, double, cv_f16_from_f64(x))
FB_CV_STORE(float, store_f64_f32, double, (float)x)
FB_CV_STORE(double, store_f64_f64, double, x)


/* The common pairs in one pass, item by item from source to packed result
   (the run conversion takes them where the result's items are contiguous):
   the same operations as the three passes above, in registers. */
#define FB_CV_FUSED_LOOP(ST, LOAD, DT, STORE, SCALED, OFFSET)                                 \
    for (i = 0; i < n; i++) {                                                               \
        ST x;                                                                               \
        DT y;                                                                               \
        float t;                                                                            \
        memcpy(&x, src + i * (fb_intp)sizeof(ST), sizeof(ST));                                \
        t = (LOAD);                                                                         \
        SCALED;                                                                             \
        OFFSET;                                                                             \
        y = (STORE);                                                                        \
        memcpy(dst + i * (fb_intp)sizeof(DT), &y, sizeof(DT));                                \
    }

#define FB_CV_FUSED(NAME, ST, LOAD, DT, STORE)                                                \
    static FB_CV_ATTR void FB_CV_NAME(NAME)(char *dst, const char *src, fb_intp n,            \
                                            const float *s, int sm, const float *o, int om) { \
        fb_intp i;                                                                          \
        float s0 = sm == FB_AFFINE_VALUE ? s[0] : 0, o0 = om == FB_AFFINE_VALUE ? o[0] : 0;    \
        switch (sm * 3 + om) {                                                              \
        case FB_AFFINE_NONE * 3 + FB_AFFINE_NONE:                                            \
            FB_CV_FUSED_LOOP(ST, LOAD, DT, STORE, , ) break;                                 \
        case FB_AFFINE_NONE * 3 + FB_AFFINE_VALUE:                                           \
            FB_CV_FUSED_LOOP(ST, LOAD, DT, STORE, , t = t + o0) break;                       \
        case FB_AFFINE_NONE * 3 + FB_AFFINE_LINE:                                            \
            FB_CV_FUSED_LOOP(ST, LOAD, DT, STORE, , t = t + o[i]) break;                     \
        case FB_AFFINE_VALUE * 3 + FB_AFFINE_NONE:                                           \
            FB_CV_FUSED_LOOP(ST, LOAD, DT, STORE, t = t * s0, ) break;                       \
        case FB_AFFINE_VALUE * 3 + FB_AFFINE_VALUE:                                          \
            FB_CV_FUSED_LOOP(ST, LOAD, DT, STORE, t = t * s0, t = t + o0) break;             \
        case FB_AFFINE_VALUE * 3 + FB_AFFINE_LINE:                                           \
            FB_CV_FUSED_LOOP(ST, LOAD, DT, STORE, t = t * s0, t = t + o[i]) break;           \
        case FB_AFFINE_LINE * 3 + FB_AFFINE_NONE:                                            \
            FB_CV_FUSED_LOOP(ST, LOAD, DT, STORE, t = t * s[i], ) break;                     \
        case FB_AFFINE_LINE * 3 + FB_AFFINE_VALUE:                                           \
            FB_CV_FUSED_LOOP(ST, LOAD, DT, STORE, t = t * s[i], t = t + o0) break;           \
        default:                                                                            \
            FB_CV_FUSED_LOOP(ST, LOAD, DT, STORE, t = t * s[i], t = t + o[i]) break;         \
        }                                                                                   \
    }

#define FB_CV_FUSED_TO(DT, DNAME, STORE)                                                      \
    FB_CV_FUSED(fused_u8_##DNAME, uint8_t, (float)x, DT, STORE)                                \
    FB_CV_FUSED(fused_u16_##DNAME, uint16_t, (float)x, DT, STORE)                              \
    FB_CV_FUSED(fused_i16_##DNAME, int16_t, (float)x, DT, STORE)                               \
    FB_CV_FUSED(fused_f16_##DNAME, uint16_t, cv_f32_from_f16(x), DT, STORE)                    \
    FB_CV_FUSED(fused_bf16_##DNAME, uint16_t, cv_f32_from_bf16(x), DT, STORE)                  \
    FB_CV_FUSED(fused_f32_##DNAME, float, x, DT, STORE)

FB_CV_FUSED_TO(float, f32, t)
FB_CV_FUSED_TO(uint16_t, f16, cv_f16_from_f32(t))
FB_CV_FUSED_TO(uint16_t, bf16, cv_bf16_from_f32(t))
FB_CV_FUSED_TO(uint8_t, u8, (uint8_t)(int32_t)cv_saturate(t, 0.0f, 255.0f))

#define FB_CV_FUSED_ROW(DNAME)                                                                \
    {NULL, FB_CV_NAME(fused_u8_##DNAME), NULL, FB_CV_NAME(fused_u16_##DNAME),                 \
     FB_CV_NAME(fused_i16_##DNAME), NULL, NULL, NULL, NULL, FB_CV_NAME(fused_f16_##DNAME),    \
     FB_CV_NAME(fused_bf16_##DNAME), FB_CV_NAME(fused_f32_##DNAME), NULL}

/* bfloat16 straight from a source that the compute type, float32, would
   round first (64-bit floats, 32- and 64-bit integers), without scale or
   offset: in one rounding. Packed results go by a loop of their own. */
#define FB_CV_BF16_LOOP(ST, EXPR, STEP)                                                      \
    for (i = 0; i < n; i++) {                                                               \
        ST x;                                                                               \
        uint16_t y;                                                                         \
        memcpy(&x, src + i * (fb_intp)sizeof(ST), sizeof(ST));                                \
        y = (EXPR);                                                                         \
        memcpy(dst + i * (STEP), &y, 2);                                                    \
    }

#define FB_CV_BF16(ST, NAME, EXPR)                                                            \
    static FB_CV_ATTR void FB_CV_NAME(NAME)(char *dst, fb_intp step, const char *src,         \
                                            fb_intp n) {                                    \
        fb_intp i;                                                                          \
        if (step == 2)                                                                      \
            FB_CV_BF16_LOOP(ST, EXPR, 2)                                                    \
        else                                                                                \
            FB_CV_BF16_LOOP(ST, EXPR, step)                                                 \
    }

FB_CV_BF16(uint32_t, bf16_from_u32, cv_bf16_from_f64((double)x))
FB_CV_BF16(int32_t, bf16_from_i32, cv_bf16_from_f64((double)x))
FB_CV_BF16(uint64_t, bf16_from_u64, cv_bf16_from_u64(x))
FB_CV_BF16(int64_t, bf16_from_i64, cv_bf16_from_i64(x))
FB_CV_BF16(double, bf16_from_f64, cv_bf16_from_f64(x))

/* This variant's passes, by source and result type. */
static const FbConvertPasses FB_CV_NAME(passes) = {
    {FB_CV_NAME(load_bool_f32), FB_CV_NAME(load_u8_f32), FB_CV_NAME(load_i8_f32),
     FB_CV_NAME(load_u16_f32), FB_CV_NAME(load_i16_f32), FB_CV_NAME(load_u32_f32),
     FB_CV_NAME(load_i32_f32), FB_CV_NAME(load_u64_f32), FB_CV_NAME(load_i64_f32),
     FB_CV_NAME(load_f16_f32), FB_CV_NAME(load_bf16_f32), FB_CV_NAME(load_f32_f32),
     FB_CV_NAME(load_f64_f32)},
    {FB_CV_NAME(load_bool_f64), FB_CV_NAME(load_u8_f64), FB_CV_NAME(load_i8_f64),
     FB_CV_NAME(load_u16_f64), FB_CV_NAME(load_i16_f64), FB_CV_NAME(load_u32_f64),
     FB_CV_NAME(load_i32_f64), FB_CV_NAME(load_u64_f64), FB_CV_NAME(load_i64_f64),
     FB_CV_NAME(load_f16_f64), FB_CV_NAME(load_bf16_f64), FB_CV_NAME(load_f32_f64),
     FB_CV_NAME(load_f64_f64)},
    FB_CV_NAME(affine_f32),
    FB_CV_NAME(affine_f64),
    FB_CV_NAME(affine_from_f32),
    FB_CV_NAME(affine_from_f64),
    {NULL, FB_CV_NAME(store_f32_u8), FB_CV_NAME(store_f32_i8), FB_CV_NAME(store_f32_u16),
     FB_CV_NAME(store_f32_i16), NULL, NULL, NULL, NULL, FB_CV_NAME(store_f32_f16),
     FB_CV_NAME(store_f32_bf16), FB_CV_NAME(store_f32_f32), NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, FB_CV_NAME(store_f64_f16), NULL, FB_CV_NAME(store_f64_f32), FB_CV_NAME(store_f64_f64)},
    /* fused[result][source], float32 compute */
    {{NULL}, FB_CV_FUSED_ROW(u8), {NULL}, {NULL}, {NULL}, {NULL}, {NULL}, {NULL}, {NULL},
     FB_CV_FUSED_ROW(f16), FB_CV_FUSED_ROW(bf16), FB_CV_FUSED_ROW(f32), {NULL}},
    {NULL, NULL, NULL, NULL, NULL, FB_CV_NAME(bf16_from_u32), FB_CV_NAME(bf16_from_i32),
     FB_CV_NAME(bf16_from_u64), FB_CV_NAME(bf16_from_i64), NULL, NULL, NULL,
     FB_CV_NAME(bf16_from_f64)},
};

#undef FB_CV_LOAD
#undef FB_CV_LOADS
#undef FB_CV_AFFINE_LOOP
#undef FB_CV_AFFINE
#undef FB_CV_STORE
#undef FB_CV_FUSED_LOOP
#undef FB_CV_FUSED
#undef FB_CV_FUSED_TO
#undef FB_CV_FUSED_ROW
#undef FB_CV_BF16_LOOP
#undef FB_CV_BF16
#endif
