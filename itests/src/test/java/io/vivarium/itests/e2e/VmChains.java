package io.vivarium.itests.e2e;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Chains of VM snapshots through the API: a child forked from a tag writes a file on its disk, a
 * file in tmpfs (its RAM) and starts a background process, is branched under a new tag (a link
 * on the tag: a qcow2 overlay and, with storage-diffchain, a page diff of its RAM) and deleted;
 * the next level forks from that tag. For {@link VmChainIT} and {@link VmChainBenchmark}.
 */
final class VmChains {
    /** Level {@code $1}'s disk file, tmpfs file (4 MiB) and background process; prints the tmpfs file's md5. */
    private static final String LEVEL = "echo level-$1 > /work/level-$1; head -c 4194304 /dev/urandom > /tmp/level-$1;"
            + " sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > /work/bg-$1.pid; sync; md5sum < /tmp/level-$1";

    private VmChains() {
    }

    /**
     * Branches {@code depth} levels on {@code root}, tagged {@code root-1} … {@code root-depth}; each
     * tag with the md5 of the tmpfs file its level wrote.
     */
    static Map<String, String> build(Api api, String root, int depth) throws IOException, InterruptedException {
        Map<String, String> tags = new LinkedHashMap<>();
        String from = root;
        for (int level = 1; level <= depth; level++) {
            String child = fork(api, from);
            String tag = root + "-" + level;
            String md5;
            try {
                md5 = api.exec(child, "sh", "-c", LEVEL, "level", Integer.toString(level)).get("stdout").asText();
                Api.Response r = api.post("/v1/sandboxes/" + child + "/branch", Map.of("tag", tag));
                if (r.status() != 201) {
                    throw new AssertionError("branch of " + child + " as " + tag + " failed: " + r.status() + " " + r.body());
                }
            } finally {
                api.delete("/v1/sandboxes/" + child);
            }
            tags.put(tag, md5);
            from = tag;
        }
        return tags;
    }

    /** One child of {@code tag}, running. */
    static String fork(Api api, String tag) throws IOException, InterruptedException {
        return api.fork(tag, 1).get(0);
    }
}
