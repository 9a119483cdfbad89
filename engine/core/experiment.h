/* An experiment as dawnrun runs it: the resolved, validated contents of one config file
 * (after @include, defaults and --set overrides). Filled by experiment_load(). */
#ifndef DAWNRUN_EXPERIMENT_H
#define DAWNRUN_EXPERIMENT_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#include "kernels/augment.h"
#include "kernels/precision.h"
#include "graph.h"

#define SCHEDULE_MAX_KNOTS 32
#define EXPERIMENT_PATH_MAX 4096

/* Piecewise-linear function of fractional epoch; constant before the first knot and
 * after the last. */
struct schedule {
    int count;
    double knots[SCHEDULE_MAX_KNOTS];   /* strictly increasing */
    double values[SCHEDULE_MAX_KNOTS];
};

enum loss_reduction { LOSS_SUM, LOSS_MEAN };

/* Weight averaging (train.average). EMA: every `every` steps avg = rho avg + (1 - rho) w
 * with rho = momentum^every, over the parameters and BN running statistics; evaluation
 * uses avg, training goes on with w. Lookahead: every `every` steps with
 * rho = decay^every * (step / total_steps)^3, avg = rho avg + (1 - rho) w and then w = avg;
 * after the last step w = avg. */
enum average_kind { AVERAGE_NONE, AVERAGE_EMA, AVERAGE_LOOKAHEAD };

/* Test-time augmentation (eval.tta): the logits are a weighted mean over views.
 * NONE: the image. FLIP: the image and its mirror, 1/2 each. FLIP_TRANSLATE: those two
 * with weight 1/4 each, and the four views mirror × {1 px up-left, 1 px down-right}
 * (reflect padding) with weight 1/8 each. */
enum tta_kind { TTA_NONE, TTA_FLIP, TTA_FLIP_TRANSLATE };

/* The optimiser of a parameter group (train.groups.KIND.optimizer). */
enum optimizer_kind { OPTIMIZER_SGD, OPTIMIZER_MUON };

/* A parameter kind's own optimiser settings (train.groups.KIND); `own` 0: the kind
 * follows train's settings with SGD, and nothing else here is read. */
struct param_group {
    int own;                         /* 1: the config gives the kind a group */
    enum optimizer_kind optimizer;
    struct schedule lr;              /* count 0: train.lr_schedule */
    double momentum;                 /* train.momentum when the group does not say */
    int nesterov;                    /* train.nesterov when the group does not say */
};

struct experiment {
    char name[128];
    char path[EXPERIMENT_PATH_MAX];      /* the config file */
    struct {
        char dir[EXPERIMENT_PATH_MAX];   /* "" = $DAWNRUN_DATA, then ./data/cifar-10-batches-bin */
        int train_subset, test_subset;   /* 0 = all */
    } data;
    struct net_spec net;
    struct {
        double epochs;
        int batch_size;
        struct schedule lr;
        double momentum;
        int nesterov;
        double weight_decay;
        enum loss_reduction loss;
        double label_smoothing;
        enum precision precision;
        double lr_scale[PARAM_KIND_COUNT];   /* per parameter kind, multiplies the lr */
        double wd_scale[PARAM_KIND_COUNT];   /* per parameter kind, multiplies weight decay */
        struct param_group groups[PARAM_KIND_COUNT];   /* by parameter kind */
        struct {
            int ns_steps;                    /* Newton-Schulz iterations */
            double ns_coefficients[3];       /* a, b, c */
            double ns_eps;
            int normalize;                   /* renormalise the weight before the step */
        } muon;                              /* for the groups whose optimizer is Muon */
        struct {
            enum average_kind kind;
            int every;                       /* steps between updates */
            double momentum;                 /* EMA, per step */
            double decay;                    /* lookahead, per step */
        } average;
    } train;
    struct augment_params augment;
    struct {
        int batch_size;
        enum tta_kind tta;
    } eval;
    int seeds;                           /* default number of seeds for a batch */
    double target_accuracy;
    char *resolved;                      /* the resolved config as libconfig text (owned) */
    char *sources;                       /* owned storage of the file names that
                                            net.layers[i].file point to */
};

/* Loads, validates and resolves `path`, applying `n_sets` overrides "key.path=value" in
 * order. Every problem is reported to stderr as "file:line: message" (or
 * "--set key=value: message"); returns DR_OK, DR_ERR_CONFIG or DR_ERR_IO. */
int experiment_load(struct experiment *e, const char *path, const char *const *sets,
                    int n_sets);
void experiment_free(struct experiment *e);

/* The canonical spelling of a config key path: a key under a map that merges into
 * another is written as that other key ("model_vars.width" -> "model.vars.width"); any
 * other key is copied as it is. Two overrides of keys with the same canonical spelling
 * set the same value (the later one wins). Returns DR_OK, DR_ERR_NOMEM when out (n bytes)
 * is too small, or DR_ERR_INTERNAL. */
int config_key_canonical(char *out, size_t n, const char *key);

#define EXPERIMENT_TRAIN_IMAGES 50000 /* CIFAR-10's training set (data.train_subset = 0) */
#define EXPERIMENT_TEST_IMAGES 10000  /* CIFAR-10's test set (data.test_subset = 0) */

/* The training images e asks for: data.train_subset, or EXPERIMENT_TRAIN_IMAGES when it
 * is 0 (all of CIFAR-10's). */
int experiment_train_images(const struct experiment *e);

/* The test images per evaluation batch: eval.batch_size, or train.batch_size when it is
 * 0 (or less). */
int experiment_eval_batch(const struct experiment *e);

/* The length of training: full batches per epoch, the steps of the whole run
 * (train.epochs times per_epoch rounded to the nearest step, at least one) and the epochs
 * they span (the last may be partial). */
struct experiment_steps {
    long per_epoch;
    long total;
    int epochs;
};

/* The length of training e on train_count images (0: the images the config asks for,
 * data.train_subset or all of CIFAR-10's). One computation for validate, train, run and
 * bench. Returns DR_OK, or DR_ERR_CONFIG (nothing printed) when the images do not fill
 * one batch; experiment_load rejects a config for which that holds with the images it
 * asks for. */
int experiment_steps(const struct experiment *e, int train_count, struct experiment_steps *out);

/* The experiment's identity: SHA-256 of its resolved config text, 64 hex digits. Two
 * configs that resolve to the same text are the same experiment. */
void experiment_hash(const struct experiment *e, char hex[65]);

/* Value of the schedule at fractional epoch t. */
double schedule_at(const struct schedule *s, double t);

/* Sets ls->type and every attribute of that layer type to the schema's default (0 for a
 * required one), exactly as the loader does for a config entry that writes none; the
 * fields of other types are left as they are (net_spec_add starts them at 0). Returns
 * DR_OK, or DR_ERR_INTERNAL when the type is not in the embedded schema. */
int config_layer_defaults(struct layer_spec *ls, enum layer_type type);

/* Prints the reference of every config key and layer type, from the schema (Markdown;
 * the generated part of docs/config.md). */
void config_schema_print(FILE *f);

/* Prints every experiment key of the schema as its dotted path ("train.lr_schedule.values"),
 * one a line, in the schema's order: the keys `--set key=value` can name (groups are not
 * listed, their members are; layer attributes are not: they go by a layer's name). */
void config_schema_print_keys(FILE *f);

/* ---- the resolved config as parameters (config_params.c) ------------------------------ */

enum param_type { PARAM_INT, PARAM_FLOAT, PARAM_BOOL, PARAM_STRING, PARAM_LIST };

/* One leaf setting of a resolved config. */
struct param {
    char *key;           /* dotted path ("train.lr_schedule.values"); an element of a list of
                            groups by its `name` ("model.layers.prep.c") or else its index
                            ("x.items[2].k") */
    char *value;         /* text: numbers as the shortest round-trip spelling ("0.2", a float
                            with a point: "1.0"), true/false, a string bare (no quotes), an
                            array/list/group as libconfig text ("[0, 8, 30]", "(0.0, 0.4)") */
    enum param_type type;
    double num;          /* int, float and bool (0/1) as a number; NaN for string and list */
};

struct param_list {
    struct param *items; /* n of them, in document order, keys unique */
    int n, cap;
};

/* Flattens a resolved config text (experiment.resolved; the results store's config_text)
 * into out, one param per leaf, in document order. Returns DR_OK, DR_ERR_CONFIG (reported)
 * when the text does not parse, DR_ERR_NOMEM; out is empty after a failure. */
int experiment_params_from_text(struct param_list *out, const char *config_text);
void param_list_free(struct param_list *p);
/* The param named key, NULL when there is none. */
const struct param *param_list_find(const struct param_list *p, const char *key);
/* "int", "float", "bool", "string", "list": the params table's type column. */
const char *param_type_name(enum param_type t);

#endif
