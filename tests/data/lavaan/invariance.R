# Reference outputs (R / lavaan / semTools) for psyq's measurement-invariance
# statistics, on the IRI data of Briganti et al. (2018), by gender.
#
# Usage (from the repo root):
#   Rscript tests/data/lavaan/invariance.R . > tests/data/lavaan/invariance_out.txt 2>&1
# The first argument is the repo root (default "."); the CSV is read from
# <root>/instruments/data/iri_briganti2018_keyed.csv and the JSON is written to
# <root>/tests/data/lavaan/invariance_out.json.
#
# Written for R 4.2.2, lavaan 0.6.14, semTools 0.5.6. jsonlite is NOT
# installed here, so the JSON is written by a small hand-rolled writer below
# (numbers with sprintf("%.10g"), NA/NaN -> null).
#
# Sections of the JSON:
#   versions, group_order, data          - provenance
#   wlsmv                                - Wu & Estabrook (2016) ordinal sequence (semTools::measEq.syntax)
#   wlsmv_lavaan_default_FS              - lavaan's own cfa(ordered=, group.equal=c("thresholds","loadings")) for FS
#   mlr                                  - continuous MLR configural/metric/scalar + Satorra-Bentler (2001) LRTs
#   ml                                   - plain ML sequence + lavTestScore of every scalar model
#   partial_<SUB>                        - emulated partial-scalar search (ML, score-test driven, Chen 2007 rule)
#   partial_metric_<SUB>                 - same for loadings, only where the ML metric step fails
#   warnings                             - every warning lavaan/semTools raised, with where it happened

suppressPackageStartupMessages({
  library(lavaan)
  library(semTools)
})

args <- commandArgs(trailingOnly = TRUE)
root <- if (length(args) >= 1) args[1] else "."
csv_path <- file.path(root, "instruments", "data", "iri_briganti2018_keyed.csv")
out_json <- file.path(root, "tests", "data", "lavaan", "invariance_out.json")

# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------

# Warnings: we want every lavaan/semTools warning printed where it happens
# (Rscript would otherwise defer them to the end without context) and kept in
# the JSON. `w_ctx` says which fit we are in.
ALL_WARNINGS <- list()
w_ctx <- ""
with_warn <- function(expr) {
  withCallingHandlers(expr, warning = function(w) {
    msg <- conditionMessage(w)
    cat(sprintf("WARNING [%s]: %s\n", w_ctx, msg))
    ALL_WARNINGS[[length(ALL_WARNINGS) + 1]] <<- list(context = w_ctx, message = msg)
    invokeRestart("muffleWarning")
  })
}

# Minimal JSON writer. Named list -> object, unnamed list -> array,
# atomic length 1 -> scalar, atomic length > 1 -> array. Use I() / as.list()
# to force an array for a length-1 vector.
json_str <- function(s) {
  s <- gsub("\\\\", "\\\\\\\\", s)
  s <- gsub("\"", "\\\\\"", s)
  s <- gsub("\n", "\\\\n", s)
  s <- gsub("\t", "\\\\t", s)
  s <- gsub("\r", "\\\\r", s)
  paste0("\"", s, "\"")
}
json_scalar <- function(x) {
  if (is.null(x) || length(x) == 0) return("null")
  if (is.factor(x)) x <- as.character(x)
  if (is.logical(x)) return(if (is.na(x)) "null" else if (x) "true" else "false")
  if (is.numeric(x)) {
    if (is.na(x) || !is.finite(x)) return("null")
    return(sprintf("%.10g", x))
  }
  if (is.na(x)) return("null")
  json_str(enc2utf8(as.character(x)))
}
to_json <- function(x, indent = 0) {
  pad <- strrep("  ", indent)
  pad1 <- strrep("  ", indent + 1)
  if (is.null(x)) return("null")
  if (is.list(x)) {
    if (length(x) == 0) return(if (is.null(names(x))) "[]" else "{}")
    if (!is.null(names(x))) {
      items <- vapply(seq_along(x), function(i)
        paste0(pad1, json_str(names(x)[i]), ": ", to_json(x[[i]], indent + 1)), "")
      return(paste0("{\n", paste(items, collapse = ",\n"), "\n", pad, "}"))
    }
    items <- vapply(x, function(e) paste0(pad1, to_json(e, indent + 1)), "")
    return(paste0("[\n", paste(items, collapse = ",\n"), "\n", pad, "]"))
  }
  x <- unname(x)
  if (length(x) == 1 && !inherits(x, "AsIs")) return(json_scalar(x))
  paste0("[", paste(vapply(seq_along(x), function(i) json_scalar(x[i]), ""), collapse = ", "), "]")
}

# Named numeric vector of fit measures -> named list (missing names -> NA,
# so they appear as null rather than silently vanishing).
pick_fit <- function(fit, which) {
  fm <- fitMeasures(fit)
  out <- lapply(which, function(k) if (k %in% names(fm)) unname(fm[[k]]) else NA)
  names(out) <- which
  out
}

# One row of parameterEstimates() -> named list.
pe_row <- function(fit, lhs, op, rhs, group) {
  pe <- parameterEstimates(fit)
  r <- pe[pe$lhs == lhs & pe$op == op & pe$rhs == rhs & pe$group == group, ]
  stopifnot(nrow(r) == 1)
  list(est = r$est, se = r$se, z = r$z, pvalue = r$pvalue,
       ci.lower = r$ci.lower, ci.upper = r$ci.upper)
}

# lavTestLRT between two nested fits -> list with the method lavaan used
# (parsed from attr "heading") and the difference test.
lrt <- function(f0, f1, from, to) {
  res <- tryCatch(with_warn(lavTestLRT(f0, f1)), error = function(e) e)
  if (inherits(res, "error")) {
    cat(sprintf("  LRT %s vs %s: ERROR %s\n", from, to, conditionMessage(res)))
    return(list(from = from, to = to, error = conditionMessage(res)))
  }
  heading <- attr(res, "heading")
  method <- regmatches(heading, regexpr("method = [^)]*", heading))
  method <- gsub("method = |[\"\u201c\u201d]", "", method)
  out <- list(from = from, to = to, method = method,
              chisq_diff = res[2, "Chisq diff"], df_diff = res[2, "Df diff"],
              pvalue = res[2, "Pr(>Chisq)"],
              heading = trimws(heading))
  if (!is.null(attr(res, "scale"))) out$scale <- attr(res, "scale")[2]
  if (!is.null(attr(res, "shift"))) out$shift <- attr(res, "shift")[2]
  cat(sprintf("  LRT %-35s -> %-35s [%s] dChisq=%.4f dDf=%d p=%.4g\n", from, to, method,
              out$chisq_diff, as.integer(out$df_diff), out$pvalue))
  out
}

# Human-readable name of a parTable row.
par_name <- function(pt_row) {
  kind <- switch(pt_row$op, "=~" = "loading", "~1" = "intercept", "|" = "threshold",
                 "~~" = "variance", "~*~" = "scale", pt_row$op)
  paste0(kind, " ", pt_row$lhs, pt_row$op, pt_row$rhs)
}

# lavTestScore(fit) with every "==" constraint mapped back (through parTable's
# plabel column) to the parameters it equates, e.g. ".p2. == .p25." ->
# "loading FS=~davi5" in groups 1 and 2.
score_table <- function(fit) {
  sc <- with_warn(lavTestScore(fit))
  pt <- parTable(fit)
  uni <- sc$uni
  rows <- lapply(seq_len(nrow(uni)), function(i) {
    a <- pt[pt$plabel == uni$lhs[i], ]
    b <- pt[pt$plabel == uni$rhs[i], ]
    list(constraint = paste(uni$lhs[i], uni$op[i], uni$rhs[i]),
         lhs = uni$lhs[i], op = uni$op[i], rhs = uni$rhs[i],
         X2 = uni$X2[i], df = uni$df[i], p.value = uni$p.value[i],
         parameter = par_name(a),
         par_lhs = a$lhs, par_op = a$op, par_rhs = a$rhs,
         groups = c(a$group, b$group),
         # the string that releases this constraint via group.partial:
         partial = if (a$op == "~1") paste0(a$lhs, "~1") else paste0(a$lhs, a$op, a$rhs))
  })
  list(test = list(X2 = sc$test$X2, df = sc$test$df, p.value = sc$test$p.value),
       uni = rows)
}

print_score <- function(st) {
  cat(sprintf("    total score test: X2=%.4f df=%d p=%.4g\n", st$test$X2,
              as.integer(st$test$df), st$test$p.value))
  for (r in st$uni)
    cat(sprintf("    %-16s %-24s X2=%9.4f p=%.4g\n", r$constraint, r$parameter, r$X2, r$p.value))
}

# Chen (2007) rule, delta = this model minus the less constrained model:
# fails when dCFI <= -.010 AND (dRMSEA >= .015 OR dSRMR >= srmr_cut);
# srmr_cut = .010 for intercepts (scalar), .030 for loadings (metric).
chen <- function(fit, ref, srmr_cut) {
  a <- fitMeasures(fit, c("cfi", "rmsea", "srmr"))
  b <- fitMeasures(ref, c("cfi", "rmsea", "srmr"))
  dd <- unname(a - b)
  fails <- (dd[1] <= -0.010) && (dd[2] >= 0.015 || dd[3] >= srmr_cut)
  list(delta_cfi = dd[1], delta_rmsea = dd[2], delta_srmr = dd[3],
       srmr_cutoff = srmr_cut, holds = !fails)
}

# ---------------------------------------------------------------------------
# Data and models
# ---------------------------------------------------------------------------
d <- read.csv(csv_path, stringsAsFactors = FALSE)
subscales <- list(
  PT = c(3, 8, 11, 15, 21, 25, 28),
  FS = c(1, 5, 7, 12, 16, 23, 26),
  EC = c(2, 4, 9, 14, 18, 20, 22),
  PD = c(6, 10, 13, 17, 19, 24, 27)
)
items_of <- function(s) paste0("davi", subscales[[s]])
model_of <- function(s) paste(s, "=~", paste(items_of(s), collapse = " + "))

cat(R.version.string, "\n")
cat("lavaan", as.character(packageVersion("lavaan")),
    " semTools", as.character(packageVersion("semTools")), "\n")
cat("data:", csv_path, " N =", nrow(d), "\n")
print(table(gender = d$gender))

# Group order: lavaan takes the groups in order of first appearance in the data
# (F first here); we keep that default and record it from a fitted object below.
group_order <- NULL

# Fit-measure sets requested per estimator.
FM_WLSMV <- c("chisq", "df", "pvalue", "chisq.scaled", "df.scaled", "pvalue.scaled",
              "chisq.scaling.factor", "cfi", "tli", "rmsea", "cfi.scaled", "tli.scaled",
              "rmsea.scaled", "rmsea.ci.lower.scaled", "rmsea.ci.upper.scaled", "srmr",
              "baseline.chisq", "baseline.df", "baseline.chisq.scaled")
FM_MLR <- c("chisq", "df", "chisq.scaled", "chisq.scaling.factor", "cfi", "tli", "rmsea",
            "cfi.scaled", "tli.scaled", "rmsea.scaled", "cfi.robust", "tli.robust",
            "rmsea.robust", "rmsea.ci.lower.robust", "rmsea.ci.upper.robust", "srmr",
            "baseline.chisq", "baseline.df", "baseline.chisq.scaled",
            "baseline.chisq.scaling.factor")
FM_ML <- c("chisq", "df", "cfi", "tli", "rmsea", "srmr")

# ---------------------------------------------------------------------------
# 2. WLSMV: Wu & Estabrook (2016) sequence built by semTools::measEq.syntax.
#    ID.fac = "std.lv": factor mean 0 / variance 1 in group 1, freed in group 2
#    once the constraints identify them. ID.cat = "Wu.Estabrook.2016" with the
#    delta parameterization: the configural model frees thresholds (fixing
#    intercepts 0 and scales 1), and each step adds the equality constraints
#    and frees the corresponding identification constraints.
# ---------------------------------------------------------------------------
WE_STEPS <- list(configural = "configural",
                 thresholds = "thresholds",
                 thresholds_loadings = c("thresholds", "loadings"),
                 thresholds_loadings_intercepts = c("thresholds", "loadings", "intercepts"))

fit_we <- function(s, EQ) {
  measEq.syntax(model_of(s), data = d, group = "gender", ordered = items_of(s),
                parameterization = "delta", ID.fac = "std.lv",
                ID.cat = "Wu.Estabrook.2016", group.equal = EQ,
                return.fit = TRUE, estimator = "WLSMV")
}

step_record_wlsmv <- function(fit, EQ) {
  ts <- lavInspect(fit, "test")
  ss <- ts[["scaled.shifted"]]
  list(equal = if (identical(EQ, "configural")) "" else paste(EQ, collapse = ","),
       fit = pick_fit(fit, FM_WLSMV),
       scaled_shifted = list(shift.parameter = ss$shift.parameter,
                             scaling.factor = ss$scaling.factor))
}

print_fit_line <- function(lbl, fm, keys) {
  cat(sprintf("  %-32s %s\n", lbl, paste(sprintf("%s=%.4f", keys, unlist(fm[keys])), collapse = " ")))
}

wlsmv <- list()
we_fits_FS <- NULL
for (s in names(subscales)) {
  cat("\n=== WLSMV (Wu & Estabrook 2016, semTools::measEq.syntax):", s, "===\n")
  fits <- list(); steps <- list()
  for (k in names(WE_STEPS)) {
    w_ctx <- paste("wlsmv", s, k)
    fits[[k]] <- with_warn(fit_we(s, WE_STEPS[[k]]))
    if (is.null(group_order)) group_order <- lavInspect(fits[[k]], "group.label")
    steps[[k]] <- c(list(step = k), step_record_wlsmv(fits[[k]], WE_STEPS[[k]]))
    print_fit_line(k, steps[[k]]$fit, c("chisq", "df", "chisq.scaled", "cfi.scaled",
                                        "rmsea.scaled", "srmr"))
  }
  last <- fits[[length(fits)]]
  w_ctx <- paste("wlsmv", s, "lrt")
  lrts <- lapply(2:length(fits), function(i)
    lrt(fits[[i - 1]], fits[[i]], names(fits)[i - 1], names(fits)[i]))
  lm2 <- pe_row(last, s, "~1", "", 2)
  cat(sprintf("  last step: latent mean group 2 (%s) = %.4f (se %.4f)\n", group_order[2], lm2$est, lm2$se))
  wlsmv[[s]] <- list(
    steps = unname(steps),
    last_step_latent_mean_group2 = lm2,
    last_step_factor_variances = list(
      group1 = pe_row(last, s, "~~", s, 1)$est,
      group2 = pe_row(last, s, "~~", s, 2)$est,
      group2_se = pe_row(last, s, "~~", s, 2)$se),
    lrt = lrts)
  if (s == "FS") we_fits_FS <- fits
}

# lavaan's own default for ordered data: delta parameterization, marker-variable
# identification, item intercepts fixed at 0 in all groups, scales fixed to 1 in
# group 1 and free in group 2, latent mean free in group 2 once thresholds and
# loadings are equal. Expected to be equivalent to the W&E
# thresholds+loadings+intercepts step (same df, same chi-square).
cat("\n=== WLSMV lavaan default cfa(ordered=, group.equal=c(thresholds, loadings)): FS ===\n")
w_ctx <- "wlsmv_lavaan_default_FS"
fit_ld <- with_warn(cfa(model_of("FS"), d, group = "gender", ordered = items_of("FS"),
                        estimator = "WLSMV", group.equal = c("thresholds", "loadings")))
rec_ld <- step_record_wlsmv(fit_ld, c("thresholds", "loadings"))
print_fit_line("lavaan default t+l", rec_ld$fit, c("chisq", "df", "chisq.scaled", "cfi.scaled",
                                                   "rmsea.scaled", "srmr"))
we_tli <- we_fits_FS[["thresholds_loadings_intercepts"]]
cmp_keys <- c("chisq", "df", "chisq.scaled", "df.scaled", "cfi.scaled", "rmsea.scaled", "srmr")
a <- unlist(rec_ld$fit[cmp_keys]); b <- unlist(pick_fit(we_tli, cmp_keys))
diffs <- a - b
max_abs_diff <- max(abs(diffs))
# The two parameterizations reach the same optimum up to optimizer tolerance,
# so compare at 1e-3 absolute (df exactly); the raw differences are recorded.
same <- (a[["df"]] == b[["df"]]) && max_abs_diff < 1e-3
cat(sprintf("  equals W&E thresholds+loadings+intercepts step? %s (max |diff| over %s = %.3g)\n",
            same, paste(cmp_keys, collapse = ","), max_abs_diff))
print(signif(rbind(lavaan_default = a, WE_tli = b, diff = diffs), 10))
wlsmv_lavaan_default_FS <- c(
  list(call = "cfa(model, d, group=\"gender\", ordered=items, estimator=\"WLSMV\", group.equal=c(\"thresholds\",\"loadings\"))"),
  rec_ld,
  list(equals_WE_thresholds_loadings_intercepts = same,
       max_abs_diff_vs_WE = max_abs_diff,
       diff_vs_WE = as.list(diffs),
       compared_keys = cmp_keys,
       latent_mean_group2 = pe_row(fit_ld, "FS", "~1", "", 2)))

# ---------------------------------------------------------------------------
# 3. MLR (items treated as continuous): configural / metric / scalar.
#    Default marker-variable identification (first loading = 1 in each group);
#    with group.equal "intercepts" lavaan frees the group-2 latent mean.
#    lavTestLRT's default for MLR is the Satorra-Bentler (2001) scaled difference.
# ---------------------------------------------------------------------------
CONT_STEPS <- list(configural = character(0),
                   metric = "loadings",
                   scalar = c("loadings", "intercepts"))
fit_cont <- function(s, EQ, estimator, partial = character(0)) {
  # group.equal = character(0) makes lavaan 0.6.14 fail, so only pass what is set
  a <- list(model_of(s), data = d, group = "gender", estimator = estimator)
  if (length(EQ)) a$group.equal <- EQ
  if (length(partial)) a$group.partial <- partial
  do.call("cfa", a)
}

mlr <- list()
for (s in names(subscales)) {
  cat("\n=== MLR:", s, "===\n")
  fits <- list(); steps <- list()
  for (k in names(CONT_STEPS)) {
    w_ctx <- paste("mlr", s, k)
    fits[[k]] <- with_warn(fit_cont(s, CONT_STEPS[[k]], "MLR"))
    steps[[k]] <- list(step = k, equal = paste(CONT_STEPS[[k]], collapse = ","),
                       fit = pick_fit(fits[[k]], FM_MLR))
    print_fit_line(k, steps[[k]]$fit, c("chisq", "df", "chisq.scaled", "cfi.robust",
                                        "rmsea.robust", "srmr"))
  }
  w_ctx <- paste("mlr", s, "lrt")
  lrts <- lapply(2:length(fits), function(i)
    lrt(fits[[i - 1]], fits[[i]], names(fits)[i - 1], names(fits)[i]))
  mlr[[s]] <- list(steps = unname(steps),
                   scalar_latent_mean_group2 = pe_row(fits$scalar, s, "~1", "", 2),
                   lrt = lrts)
}

# ---------------------------------------------------------------------------
# 4. Plain ML sequence + lavTestScore of every scalar model.
#    lavTestScore tests each "==" constraint of the parTable (one row per
#    constraint, labelled by plabels); we map plabels back to parameters.
# ---------------------------------------------------------------------------
ml <- list()
ml_fits <- list()
for (s in names(subscales)) {
  cat("\n=== ML:", s, "===\n")
  fits <- list(); steps <- list()
  for (k in names(CONT_STEPS)) {
    w_ctx <- paste("ml", s, k)
    fits[[k]] <- with_warn(fit_cont(s, CONT_STEPS[[k]], "ML"))
    steps[[k]] <- list(step = k, equal = paste(CONT_STEPS[[k]], collapse = ","),
                       fit = pick_fit(fits[[k]], FM_ML))
    print_fit_line(k, steps[[k]]$fit, FM_ML)
  }
  metric_vs_configural <- chen(fits$metric, fits$configural, 0.030)
  scalar_vs_metric <- chen(fits$scalar, fits$metric, 0.010)
  cat(sprintf("  Chen: metric vs configural holds=%s (dCFI=%.4f dRMSEA=%.4f dSRMR=%.4f)\n",
              metric_vs_configural$holds, metric_vs_configural$delta_cfi,
              metric_vs_configural$delta_rmsea, metric_vs_configural$delta_srmr))
  cat(sprintf("  Chen: scalar vs metric     holds=%s (dCFI=%.4f dRMSEA=%.4f dSRMR=%.4f)\n",
              scalar_vs_metric$holds, scalar_vs_metric$delta_cfi,
              scalar_vs_metric$delta_rmsea, scalar_vs_metric$delta_srmr))
  # Identification check in the scalar model: are all intercepts (marker's
  # included) constrained equal, and is the group-2 latent mean free?
  pt <- parTable(fits$scalar)
  n_int_constraints <- sum(vapply(seq_len(nrow(pt)), function(i) {
    pt$op[i] == "==" && any(pt$op[pt$plabel == pt$lhs[i]] == "~1")
  }, logical(1)))
  mean2_free <- pt$free[pt$lhs == s & pt$op == "~1" & pt$group == 2] > 0
  cat(sprintf("  scalar model: %d intercept equality constraints (of %d items); group-2 latent mean free: %s\n",
              n_int_constraints, length(items_of(s)), mean2_free))
  w_ctx <- paste("ml", s, "scalar lavTestScore")
  st <- score_table(fits$scalar)
  cat("  lavTestScore(scalar):\n"); print_score(st)
  ml[[s]] <- list(steps = unname(steps),
                  chen_metric_vs_configural = metric_vs_configural,
                  chen_scalar_vs_metric = scalar_vs_metric,
                  scalar_intercept_constraints = n_int_constraints,
                  scalar_latent_mean_group2_free = mean2_free,
                  scalar_lavTestScore = st)
  ml_fits[[s]] <- fits
}

# How group.partial interacts with group.equal for the marker item (FS):
#  - the marker's intercept is an ordinary "==" constraint, so releasing it
#    ("davi1~1") removes one constraint (df - 1) and the latent mean stays
#    identified by the remaining equal intercepts;
#  - the marker's loading is fixed to 1 in both groups (not a constraint), so
#    "FS=~davi1" in group.partial changes nothing (same df, same chisq).
cat("\n=== marker checks (ML, FS) ===\n")
w_ctx <- "marker checks FS"
mk_int <- with_warn(fit_cont("FS", c("loadings", "intercepts"), "ML", partial = "davi1~1"))
mk_load <- with_warn(fit_cont("FS", "loadings", "ML", partial = "FS=~davi1"))
pt_int <- parTable(mk_int)
marker_checks_FS <- list(
  scalar_release_marker_intercept = list(
    group.partial = "davi1~1",
    fit = pick_fit(mk_int, c("chisq", "df", "cfi", "rmsea", "srmr")),
    scalar_df = fitMeasures(ml_fits$FS$scalar, "df")[[1]],
    latent_mean_group2_free = pt_int$free[pt_int$lhs == "FS" & pt_int$op == "~1" & pt_int$group == 2] > 0,
    latent_mean_group2 = pe_row(mk_int, "FS", "~1", "", 2)),
  metric_release_marker_loading = list(
    group.partial = "FS=~davi1",
    fit = pick_fit(mk_load, c("chisq", "df", "cfi", "rmsea", "srmr")),
    metric_df = fitMeasures(ml_fits$FS$metric, "df")[[1]],
    metric_chisq = fitMeasures(ml_fits$FS$metric, "chisq")[[1]]))
cat(sprintf("  scalar + group.partial='davi1~1': df=%d (scalar df=%d), chisq=%.4f, group-2 mean free=%s, est=%.4f\n",
            as.integer(marker_checks_FS[[1]]$fit$df), as.integer(marker_checks_FS[[1]]$scalar_df),
            marker_checks_FS[[1]]$fit$chisq, marker_checks_FS[[1]]$latent_mean_group2_free,
            marker_checks_FS[[1]]$latent_mean_group2$est))
cat(sprintf("  metric + group.partial='FS=~davi1': df=%d chisq=%.4f (metric df=%d chisq=%.4f)\n",
            as.integer(marker_checks_FS[[2]]$fit$df), marker_checks_FS[[2]]$fit$chisq,
            as.integer(marker_checks_FS[[2]]$metric_df), marker_checks_FS[[2]]$metric_chisq))
ml$FS$marker_checks <- marker_checks_FS

# ---------------------------------------------------------------------------
# 5. Partial invariance search (emulated), ML.
#    Start from the fully constrained model of the step; repeat:
#      - if the Chen rule holds against the reference model: stop (holds);
#      - else take the largest univariate score-test X2 among the constraints
#        still in place that concern the parameter type (intercepts / loadings);
#        stop if its p >= .05; stop if releasing it would leave fewer than
#        ceiling(k/2) items with equal parameters; else add it to
#        group.partial and refit.
#    For intercepts the marker's intercept is an ordinary equality constraint
#    (it appears in lavTestScore) and so can be released. For loadings the
#    marker loading is fixed to 1 in both groups (no constraint, never
#    released) and counts as equal.
# ---------------------------------------------------------------------------
latent_summary <- function(fit, s) {
  lm2 <- pe_row(fit, s, "~1", "", 2)
  v1 <- pe_row(fit, s, "~~", s, 1)$est
  v2 <- pe_row(fit, s, "~~", s, 2)$est
  n <- unlist(lavInspect(fit, "nobs"))
  pooled <- (n[1] * v1 + n[2] * v2) / sum(n)
  list(latent_mean_group2 = lm2[c("est", "se", "ci.lower", "ci.upper")],
       factor_variance_group1 = v1, factor_variance_group2 = v2,
       n = n, pooled_variance = unname(pooled),
       d_latent = unname(lm2$est / sqrt(pooled)))
}

partial_search <- function(s, kind) {
  fits <- ml_fits[[s]]
  if (kind == "intercepts") {
    EQ <- c("loadings", "intercepts"); ref <- fits$metric; srmr_cut <- 0.010; op <- "~1"
    start <- fits$scalar; n_equal <- length(items_of(s))
  } else {
    EQ <- "loadings"; ref <- fits$configural; srmr_cut <- 0.030; op <- "=~"
    start <- fits$metric; n_equal <- length(items_of(s))  # marker fixed, counts as equal
  }
  k_min <- ceiling(length(items_of(s)) / 2)
  cat(sprintf("\n=== partial %s search (ML): %s (min equal = %d) ===\n", kind, s, k_min))
  released <- character(0); iters <- list(); cur <- start; final <- NULL
  repeat {
    ch <- chen(cur, ref, srmr_cut)
    if (ch$holds) {
      final <- if (length(released) == 0) sprintf("holds with no release") else
        sprintf("partial %s holds after releasing %s", if (kind == "intercepts") "scalar" else "metric",
                paste(released, collapse = ", "))
      break
    }
    w_ctx <- sprintf("partial %s %s after %d releases lavTestScore", kind, s, length(released))
    st <- score_table(cur)
    cand <- Filter(function(r) r$par_op == op, st$uni)
    if (length(cand) == 0) { final <- sprintf("not invariant: no %s constraints left", kind); break }
    best <- cand[[which.max(vapply(cand, function(r) r$X2, 0))]]
    if (best$p.value >= 0.05) {
      final <- sprintf("not invariant: largest remaining X2 (%s, X2=%.4f) has p=%.4g >= .05 (released so far: %s)",
                       best$partial, best$X2, best$p.value,
                       if (length(released)) paste(released, collapse = ", ") else "none")
      break
    }
    if (n_equal - 1 < k_min) {
      final <- sprintf("not invariant: releasing %s would leave %d < %d items with equal %s (released so far: %s)",
                       best$partial, n_equal - 1, k_min, kind, paste(released, collapse = ", "))
      break
    }
    released <- c(released, best$partial); n_equal <- n_equal - 1
    w_ctx <- sprintf("partial %s %s release %s", kind, s, best$partial)
    cur <- with_warn(fit_cont(s, EQ, "ML", partial = released))
    fm <- pick_fit(cur, c("chisq", "df", "cfi", "rmsea", "srmr"))
    ch2 <- chen(cur, ref, srmr_cut)
    cat(sprintf("  release %-12s X2=%9.4f p=%.4g -> chisq=%.4f df=%d cfi=%.4f rmsea=%.4f srmr=%.4f | dCFI=%.4f dRMSEA=%.4f dSRMR=%.4f holds=%s\n",
                best$partial, best$X2, best$p.value, fm$chisq, as.integer(fm$df), fm$cfi, fm$rmsea, fm$srmr,
                ch2$delta_cfi, ch2$delta_rmsea, ch2$delta_srmr, ch2$holds))
    iters[[length(iters) + 1]] <- list(
      released = best$partial, parameter = best$parameter, constraint = best$constraint,
      X2 = best$X2, p.value = best$p.value, group.partial = as.list(released),
      fit = fm, chen_vs_reference = ch2)
  }
  cat("  final:", final, "\n")
  ls <- latent_summary(cur, s)
  cat(sprintf("  final model: latent mean group 2 = %.4f (se %.4f, CI %.4f..%.4f); var1=%.4f var2=%.4f; d=%.4f\n",
              ls$latent_mean_group2$est, ls$latent_mean_group2$se, ls$latent_mean_group2$ci.lower,
              ls$latent_mean_group2$ci.upper, ls$factor_variance_group1, ls$factor_variance_group2, ls$d_latent))
  list(kind = kind, estimator = "ML",
       reference = if (kind == "intercepts") "metric" else "configural",
       srmr_cutoff = srmr_cut, min_equal_items = k_min,
       start = list(fit = pick_fit(start, c("chisq", "df", "cfi", "rmsea", "srmr")),
                    chen_vs_reference = chen(start, ref, srmr_cut)),
       iterations = iters, final_state = final,
       final_group.partial = as.list(released),
       final_model = c(list(fit = pick_fit(cur, c("chisq", "df", "cfi", "rmsea", "srmr"))), ls))
}

partials <- list()
for (s in names(subscales)) {
  if (!ml[[s]]$chen_metric_vs_configural$holds)
    partials[[paste0("partial_metric_", s)]] <- partial_search(s, "loadings")
  if (!ml[[s]]$chen_scalar_vs_metric$holds)
    partials[[paste0("partial_", s)]] <- partial_search(s, "intercepts")
}
if (!any(grepl("^partial_metric_", names(partials))))
  cat("\nNo subscale fails the ML metric step (Chen, SRMR cut .030): no partial-metric search.\n")
cat("\nSubscales failing the ML scalar step:",
    paste(sub("^partial_", "", grep("^partial_[A-Z]", names(partials), value = TRUE)), collapse = ", "), "\n")

# ---------------------------------------------------------------------------
# Write JSON
# ---------------------------------------------------------------------------
out <- c(
  list(
    versions = list(R = R.version.string,
                    lavaan = as.character(packageVersion("lavaan")),
                    semTools = as.character(packageVersion("semTools"))),
    group_order = as.list(group_order),
    data = list(file = "instruments/data/iri_briganti2018_keyed.csv", n = nrow(d),
                n_by_group = as.list(table(factor(d$gender, levels = group_order))),
                subscales = lapply(subscales, function(v) as.list(paste0("davi", v)))),
    wlsmv = wlsmv,
    wlsmv_lavaan_default_FS = wlsmv_lavaan_default_FS,
    mlr = mlr,
    ml = ml),
  partials,
  list(warnings = ALL_WARNINGS)
)
dir.create(dirname(out_json), showWarnings = FALSE, recursive = TRUE)
writeLines(to_json(out), out_json, useBytes = TRUE)
cat("\nwrote", out_json, "\n")
cat("warnings raised:", length(ALL_WARNINGS), "\n")
