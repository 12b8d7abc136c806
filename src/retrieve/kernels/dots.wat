;; The exact-cosine kernel of src/retrieve/semantic.ts. Source of the generated dots-wasm.ts: after editing, run
;; `npm run build:wasm` (scripts/build-wasm.ts, wabt); test/retrieve/semantic-kernel.test.ts fails while the committed
;; bytes differ from this text.
;;
;; dots(m, q, out, n, dp): all arguments are byte offsets into the imported memory `env.memory`, except n (rows) and
;; dp (floats per row, a multiple of 16, >= 16). For each of the n rows of dp float32 starting at m, stores the row's
;; dot product with the dp float32 at q as a float32 at out, out + 4, ...
;;
;; Arithmetic (the JS engine `dotsJs` emulates it with Math.fround, bit for bit): 16 running float32 sums per row,
;; 4 SIMD accumulators x 4 lanes; element j goes to accumulator (j mod 16) / 4, lane j mod 4. Every product and sum is
;; rounded to float32. At the end of a row: a = (a0 + a1) + (a2 + a3) lane-wise, then ((a[0] + a[1]) + a[2]) + a[3].
;;
;; The memory is shared (a SharedArrayBuffer) so that worker threads can search one matrix without copying it;
;; maximum 65536 pages = 4 GiB, the wasm32 limit (the matrix is split into shards well below it).
(module
  (import "env" "memory" (memory 1 65536 shared))
  (func (export "dots") (param $m i32) (param $q i32) (param $out i32) (param $n i32) (param $dp i32)
    (local $end i32) (local $qp i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (block $done
      (loop $rows
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $a0 (v128.const i32x4 0 0 0 0))
        (local.set $a1 (v128.const i32x4 0 0 0 0))
        (local.set $a2 (v128.const i32x4 0 0 0 0))
        (local.set $a3 (v128.const i32x4 0 0 0 0))
        (local.set $qp (local.get $q))
        ;; end of this row: m + 4 * dp bytes
        (local.set $end (i32.add (local.get $m) (i32.shl (local.get $dp) (i32.const 2))))
        (loop $cols
          ;; 16 floats per step: accumulator k takes floats 4k .. 4k + 3
          (local.set $a0 (f32x4.add (local.get $a0)
            (f32x4.mul (v128.load offset=0 (local.get $m)) (v128.load offset=0 (local.get $qp)))))
          (local.set $a1 (f32x4.add (local.get $a1)
            (f32x4.mul (v128.load offset=16 (local.get $m)) (v128.load offset=16 (local.get $qp)))))
          (local.set $a2 (f32x4.add (local.get $a2)
            (f32x4.mul (v128.load offset=32 (local.get $m)) (v128.load offset=32 (local.get $qp)))))
          (local.set $a3 (f32x4.add (local.get $a3)
            (f32x4.mul (v128.load offset=48 (local.get $m)) (v128.load offset=48 (local.get $qp)))))
          (local.set $qp (i32.add (local.get $qp) (i32.const 64)))
          (br_if $cols (i32.lt_u (local.tee $m (i32.add (local.get $m) (i32.const 64))) (local.get $end))))
        ;; combine: (a0 + a1) + (a2 + a3) lane-wise, then the lanes left to right
        (f32.store (local.get $out)
          (f32.add
            (f32.add
              (f32.add
                (f32x4.extract_lane 0
                  (local.tee $a0 (f32x4.add (f32x4.add (local.get $a0) (local.get $a1))
                                            (f32x4.add (local.get $a2) (local.get $a3)))))
                (f32x4.extract_lane 1 (local.get $a0)))
              (f32x4.extract_lane 2 (local.get $a0)))
            (f32x4.extract_lane 3 (local.get $a0))))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $rows)))))
