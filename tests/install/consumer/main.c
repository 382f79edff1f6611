/* Consumer of an installed clnorm: layer-3 reference on one row, status strings.
 * Built twice by the install test: through find_package(clnorm) and through pkg-config. */
#include <clnorm.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static int near(double got, double want, double tol)
{
    return fabs(got - want) <= tol;
}

int main(void)
{
    const float x[5] = {10.0f, 20.0f, 30.0f, 40.0f, 50.0f};
    float y[5], mean = 0.0f, rstd = 0.0f;
    clnorm_desc desc;
    clnorm_desc_init(&desc, CLNORM_LAYER, 1, 5);
    desc.flags = CLNORM_NO_GAMMA | CLNORM_NO_BETA | CLNORM_SAVE_STATS;

    clnorm_status s = clnorm_ref_forward(&desc, x, y, NULL, NULL, &mean, &rstd);
    if (s != CLNORM_OK) {
        fprintf(stderr, "clnorm_ref_forward: %d (%s)\n", s, clnorm_status_string(s));
        return 1;
    }
    /* mean 30, biased variance 200, eps 1e-5 inside the square root. */
    const double want_rstd = 1.0 / sqrt(200.0 + 1e-5);
    int bad = 0;
    for (int i = 0; i < 5; ++i) {
        const double want = (x[i] - 30.0) * want_rstd;
        if (!near(y[i], want, 1e-5)) {
            fprintf(stderr, "y[%d] = %.9g, want %.9g\n", i, y[i], want);
            bad = 1;
        }
    }
    if (!near(mean, 30.0, 1e-5) || !near(rstd, want_rstd, 1e-7)) {
        fprintf(stderr, "mean %.9g rstd %.9g, want 30 and %.9g\n", mean, rstd, want_rstd);
        bad = 1;
    }

    const char *ok = clnorm_status_string(CLNORM_OK);
    const char *inv = clnorm_status_string(CLNORM_INVALID_ARGUMENT);
    if (ok == NULL || inv == NULL || ok[0] == '\0' || inv[0] == '\0' || strcmp(ok, inv) == 0) {
        fprintf(stderr, "clnorm_status_string gave \"%s\" / \"%s\"\n", ok ? ok : "(null)",
                inv ? inv : "(null)");
        bad = 1;
    }
    /* A bad description is refused with CLNORM_INVALID_ARGUMENT and writes nothing. */
    desc.cols = 0;
    if (clnorm_ref_forward(&desc, x, y, NULL, NULL, &mean, &rstd) != CLNORM_INVALID_ARGUMENT) {
        fprintf(stderr, "cols = 0 was not refused\n");
        bad = 1;
    }

    printf("clnorm %d.%d.%d consumer: y = [%.6f %.6f %.6f %.6f %.6f], status \"%s\": %s\n",
           CLNORM_VERSION_MAJOR, CLNORM_VERSION_MINOR, CLNORM_VERSION_PATCH, y[0], y[1], y[2],
           y[3], y[4], ok, bad ? "FAIL" : "ok");
    return bad;
}
