/* rx-oracle C example target: the protocol loop (conformance/PROTOCOL.md, protocol 1).
 *
 * Prints the hello line, then reads one JSON request per line from stdin:
 *   {"type":"run","id":N,"scenario":{...}}  ->  {"type":"result","id":N,"observables":{...}}
 *                                            or {"type":"error","id":N,"message":"..."}
 *   {"type":"bye"} or end of input            ->  exit 0
 * Every answer is one line on stdout, flushed at once; logs go to stderr.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

/* "kernel" (protocol 1.1): the kfunc rules here follow 6.18.15 (a refused CPUMAP program reads
 * -ENOMEM, attach checks before the ndo_bpf check; 6.18.44 already checks after it), so the
 * suite predicts for 6.18.15. */
#define HELLO                                                                                  \
    "{\"type\":\"hello\",\"protocol\":1,\"name\":\"rx-oracle C example target\","            \
    "\"capabilities\":{\"components\":[\"rss\",\"kfunc\"],\"reports\":[\"*\"]},"           \
    "\"kernel\":\"6.18.15\"}"

/* The request id as the suite sent it (an integer, exact even beyond 2^53). */
static cJSON *copy_id(const cJSON *id)
{
    int64_t value;
    if (id == NULL)
        return cJSON_CreateNull();
    if (ju_get_i64(id, &value) == 0)
        return ju_i64(value);
    return cJSON_Duplicate(id, 1);
}

static void answer_error(const cJSON *id, const char *message)
{
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "type", "error");
    cJSON_AddItemToObject(msg, "id", copy_id(id));
    cJSON_AddStringToObject(msg, "message", message);
    ju_emit(msg);
    cJSON_Delete(msg);
    fprintf(stderr, "rx-oracle-c-target: error: %s\n", message);
}

static void handle_run(const cJSON *req)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
    const cJSON *scenario = cJSON_GetObjectItemCaseSensitive(req, "scenario");
    const char *component;
    char err[RXO_ERRLEN] = "";
    cJSON *observables = NULL, *msg;

    if (!cJSON_IsObject(scenario)) {
        answer_error(id, "run request without a scenario object");
        return;
    }
    component = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(scenario, "component"));
    if (component != NULL && strcmp(component, "rss") == 0) {
        observables = rss_run(scenario, err);
    } else if (component != NULL && strcmp(component, "kfunc") == 0) {
        observables = kfunc_run(scenario, err);
    } else {
        snprintf(err, sizeof err, "component %.60s is not implemented",
                 component != NULL ? component : "(none)");
    }
    if (observables == NULL) {
        answer_error(id, err[0] ? err : "cannot run this scenario");
        return;
    }
    msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "type", "result");
    cJSON_AddItemToObject(msg, "id", copy_id(id));
    cJSON_AddItemToObject(msg, "observables", observables);
    ju_emit(msg);
    cJSON_Delete(msg);
}

int main(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;

    fputs(HELLO "\n", stdout);
    fflush(stdout);

    /* getline() grows the buffer as needed: a request line can be of any length. */
    while ((len = getline(&line, &cap, stdin)) != -1) {
        char *text;
        cJSON *req;
        const char *type;

        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0)
            continue;
        text = ju_protect_big_ints(line, (size_t)len);
        req = text != NULL ? cJSON_ParseWithLength(text, strlen(text)) : NULL;
        free(text);
        if (!cJSON_IsObject(req)) {
            cJSON_Delete(req);
            answer_error(NULL, "request is not a JSON object");
            continue;
        }
        type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "type"));
        if (type != NULL && strcmp(type, "bye") == 0) {
            cJSON_Delete(req);
            break;
        }
        if (type != NULL && strcmp(type, "run") == 0)
            handle_run(req);
        else
            fprintf(stderr, "rx-oracle-c-target: ignoring a message of type %s\n",
                    type != NULL ? type : "(none)");
        cJSON_Delete(req);
    }
    free(line);
    return 0;
}
