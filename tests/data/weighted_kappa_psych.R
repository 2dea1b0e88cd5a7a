# Weighted kappa by R's psych::cohen.kappa, the reference of tests/test_leas_agreement.py
# (psyq.analysis.statistics.agreement.weighted_kappa / kappa_from_table). Run:
#   Rscript tests/data/weighted_kappa_psych.R > tests/data/weighted_kappa_psych.txt
# psych takes disagreement weights (0 on the diagonal); its default is the squared distance.
suppressPackageStartupMessages(library(psych))
cat(R.version.string, "; psych", as.character(packageVersion("psych")), "\n")

# 1. Cohen (1968), Table 1: proportions of 200 cases, Judge B rows, Judge A columns, his weights 1, 3, 6.
cohen <- matrix(c(0.44, 0.07, 0.09,
                  0.05, 0.20, 0.05,
                  0.01, 0.03, 0.06), ncol = 3, byrow = TRUE)
cohen_weights <- matrix(c(0, 1, 3,
                          1, 0, 6,
                          3, 6, 0), ncol = 3, byrow = TRUE)
k <- suppressWarnings(cohen.kappa(cohen, cohen_weights, n.obs = 200))   # warns only of its confidence limits past 1
cat(sprintf("cohen1968 kappa %.6f weighted %.6f\n", k$kappa, k$weighted.kappa))

# 2. Twenty LEAS levels (0-4) of two scorers, every level 0-4 a category.
a <- c(0, 1, 2, 3, 4, 3, 3, 4, 2, 1, 0, 3, 4, 4, 3, 2, 3, 1, 4, 3)
b <- c(0, 2, 2, 3, 3, 3, 4, 4, 1, 1, 0, 3, 4, 3, 3, 3, 2, 1, 4, 4)
levels <- 0:4
linear <- abs(outer(levels, levels, "-"))
quadratic <- linear^2
kl <- suppressWarnings(cohen.kappa(cbind(a, b), w = linear, levels = levels))
kq <- suppressWarnings(cohen.kappa(cbind(a, b), w = quadratic, levels = levels))
cat(sprintf("leas20 unweighted %.6f linear %.6f quadratic %.6f\n", kl$kappa, kl$weighted.kappa, kq$weighted.kappa))

# 3. The same with no answer at level 1 (a's and b's 1s made 0): the weights stay the levels' distance.
a0 <- ifelse(a == 1, 0, a)
b0 <- ifelse(b == 1, 0, b)
kl0 <- suppressWarnings(cohen.kappa(cbind(a0, b0), w = linear, levels = levels))
kq0 <- suppressWarnings(cohen.kappa(cbind(a0, b0), w = quadratic, levels = levels))
cat(sprintf("leas20_no1 unweighted %.6f linear %.6f quadratic %.6f\n", kl0$kappa, kl0$weighted.kappa, kq0$weighted.kappa))
