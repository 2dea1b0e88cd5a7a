# Thresholds, polychoric correlations and their asymptotic covariance ("gamma", N times the ACOV)
# as lavaan computes them for WLSMV (two-step: Olsson 1979; Muthen 1984), for the checks of
# analysis/statistics/polychoric.py (tests/test_polychoric.py).
#
# Reads instruments/data/iri_briganti2018_keyed.csv (1,973 people, davi1..davi28 coded 0-4, gender F/M)
# and writes tests/data/lavaan/polychoric_out.json: for the IRI Fantasy (FS) and Personal Distress (PD)
# items, for everyone and by gender (a two-group fit, group = "gender"), the sample thresholds and
# correlations (lavInspect(fit, "sampstat")), lavInspect(fit, "wls.obs") and lavInspect(fit, "gamma")
# with its row names, plus the R and lavaan versions. A third set ("mixed") derives items with 2, 3 and
# 5 categories from FS items, two of them two-category items whose 2 x 2 table has one empty cell
# (lavaan's zero.add rule): bin1 = davi1 >= 3, bin2 = davi1 >= 3 and davi5 >= 2 (so bin1 = 0, bin2 = 1
# never happens), tri5 = davi5 cut into 0-1, 2, 3-4, with davi7 and davi12 as they are. A fourth
# ("outlier", group "all") reads tests/data/lavaan/polychoric_outlier.csv: three items of 800 simulated
# respondents correlating about .9, plus one answering 0, 4, 0, whose cells have a probability below
# sqrt(machine epsilon) at the estimates (lavaan's conventions for tiny cells at work).
#
# Run from anywhere:  Rscript tests/data/lavaan/polychoric.R [input.csv] [output.json]
# Written against R 4.2.2 and lavaan 0.6-14. Needs only lavaan (JSON is written by hand).

suppressPackageStartupMessages(library(lavaan))

script_dir <- local({
  file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  if (length(file_arg) == 1L) dirname(normalizePath(sub("^--file=", "", file_arg))) else getwd()
})
args <- commandArgs(trailingOnly = TRUE)
input <- if (length(args) >= 1L) args[1] else
  file.path(script_dir, "..", "..", "..", "instruments", "data", "iri_briganti2018_keyed.csv")
output <- if (length(args) >= 2L) args[2] else file.path(script_dir, "polychoric_out.json")

data <- read.csv(input, stringsAsFactors = FALSE)
data$bin1 <- as.integer(data$davi1 >= 3)
data$bin2 <- as.integer(data$davi1 >= 3 & data$davi5 >= 2)
data$tri5 <- ifelse(data$davi5 <= 1, 0L, ifelse(data$davi5 == 2, 1L, 2L))

subscales <- list(
  FS = c("davi1", "davi5", "davi7", "davi12", "davi16", "davi23", "davi26"),
  PD = c("davi6", "davi10", "davi13", "davi17", "davi19", "davi24", "davi27"),
  mixed = c("bin1", "bin2", "tri5", "davi7", "davi12")
)

# --- a small JSON writer (jsonlite is not installed here) ---------------------------------------
num <- function(x) {
  x <- as.numeric(x)
  out <- sprintf("%.17g", x)
  out[is.na(x)] <- "null"
  out
}
json_vec <- function(x) paste0("[", paste(num(x), collapse = ", "), "]")
json_str <- function(x) paste0('"', gsub('"', '\\\\"', x), '"')
json_strs <- function(x) paste0("[", paste(json_str(x), collapse = ", "), "]")
json_mat <- function(m) paste0("[\n        ", paste(apply(m, 1, json_vec), collapse = ",\n        "), "]")

one_case <- function(subscale, group, items, n, sampstat, wls_obs, gamma) {
  th <- sampstat$th
  cor <- sampstat$cov[items, items]
  paste0(
    "    {\n",
    '      "subscale": ', json_str(subscale), ",\n",
    '      "group": ', json_str(group), ",\n",
    '      "items": ', json_strs(items), ",\n",
    '      "n": ', n, ",\n",
    '      "threshold_names": ', json_strs(names(th)), ",\n",
    '      "thresholds": ', json_vec(th), ",\n",
    '      "correlations": ', json_mat(cor), ",\n",
    '      "wls_obs_names": ', json_strs(names(wls_obs)), ",\n",
    '      "wls_obs": ', json_vec(wls_obs), ",\n",
    '      "gamma_names": ', json_strs(rownames(gamma)), ",\n",
    '      "gamma": ', json_mat(gamma), "\n",
    "    }")
}

cases <- character(0)
for (subscale in names(subscales)) {
  items <- subscales[[subscale]]
  model <- paste(subscale, "=~", paste(items, collapse = " + "))

  fit <- cfa(model, data = data, ordered = items, estimator = "WLSMV")
  cases <- c(cases, one_case(subscale, "all", items, lavInspect(fit, "nobs"),
                             lavInspect(fit, "sampstat"), lavInspect(fit, "wls.obs"),
                             lavInspect(fit, "gamma")))

  fit_g <- cfa(model, data = data, ordered = items, estimator = "WLSMV", group = "gender")
  labels <- lavInspect(fit_g, "group.label")
  nobs <- lavInspect(fit_g, "nobs")
  sampstat <- lavInspect(fit_g, "sampstat")
  wls_obs <- lavInspect(fit_g, "wls.obs")
  gamma <- lavInspect(fit_g, "gamma")
  for (g in seq_along(labels)) {
    cases <- c(cases, one_case(subscale, labels[g], items, nobs[g], sampstat[[g]], wls_obs[[g]],
                               gamma[[g]]))
  }
}

outlier <- read.csv(file.path(script_dir, "polychoric_outlier.csv"))
fit_o <- cfa("F =~ y1 + y2 + y3", data = outlier, ordered = c("y1", "y2", "y3"), estimator = "WLSMV")
cases <- c(cases, one_case("outlier", "all", c("y1", "y2", "y3"), lavInspect(fit_o, "nobs"),
                           lavInspect(fit_o, "sampstat"), lavInspect(fit_o, "wls.obs"), lavInspect(fit_o, "gamma")))

writeLines(c(
  "{",
  paste0('  "R": ', json_str(R.version.string), ","),
  paste0('  "lavaan": ', json_str(as.character(packageVersion("lavaan"))), ","),
  paste0('  "pbivnorm": ', json_str(as.character(packageVersion("pbivnorm"))), ","),
  '  "cases": [',
  paste(cases, collapse = ",\n"),
  "  ]",
  "}"), output)
