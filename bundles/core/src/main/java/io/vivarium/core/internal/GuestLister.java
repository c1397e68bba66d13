package io.vivarium.core.internal;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.GuestChannel;

/**
 * Lists files inside a guest through the guest channel, the path a VM (whose disk the host cannot
 * read) takes: natively where the channel knows the fingerprint mode (one walk in the guest),
 * else by running the mode's listing command.
 */
final class GuestLister {
    private GuestLister() {
    }

    static FileListing list(GuestChannel channel, List<String> dirs, FingerprintMode mode, ListingLimits limits) {
        long startedAt = java.time.Instant.now().getEpochSecond();
        // the listing is cut at what the channel can carry (the stock agent's 16 MiB) or the listing limit
        long channelMax = channel.limits().maxOutputBytes();
        long maxBytes = Math.min(ListingLimits.MAX_BYTES, channelMax - 1);
        String limit = maxBytes < ListingLimits.MAX_BYTES
                ? (channelMax >> 20) + " MiB the guest channel carries per exec" : (maxBytes >> 20) + " MiB";
        ExecRequest request = new ExecRequest(mode.guestListingCommand(dirs),
                (int) Math.max(1, limits.remainingMillis() / 1000), Map.of("PATH", "/usr/bin:/bin:/usr/sbin:/sbin",
                        "LC_ALL", "C.UTF-8"), "/", null, (int) maxBytes + 1);
        ExecResult r = channel.listFiles(mode.name(), dirs, request).orElseGet(() -> channel.exec(request));
        if (r.timedOut()) {
            limits.checkTime();
            throw ApiException.badRequest("listing the files in the guest timed out; narrow the paths");
        }
        if (r.truncated()) {
            throw ApiException.badRequest("the listing exceeds the " + limit + "; narrow the paths");
        }
        if (r.exitCode() != 0) {
            throw ApiException.badRequest("the walk failed in the guest (exit " + r.exitCode() + "), so nothing was recorded: "
                    + r.stderr().strip());
        }
        return new FileListing(mode.name(), dirs, startedAt, parse(r.stdout(), limits), null);
    }

    /** Records are {@code <fingerprint> TAB <path> NUL}. */
    static TreeMap<String, String> parse(String out, ListingLimits limits) {
        TreeMap<String, String> files = new TreeMap<>();
        int start = 0;
        while (start < out.length()) {
            int end = out.indexOf('\0', start);
            if (end < 0) {
                throw ApiException.badRequest("the guest's listing is malformed: the last record has no terminator");
            }
            String record = out.substring(start, end);
            int tab = record.indexOf('\t');
            if (tab <= 0) {
                throw ApiException.badRequest("the guest's listing is malformed near \"" + record + "\"");
            }
            String path = record.substring(tab + 1);
            String fp = record.substring(0, tab);
            limits.add(path, fp);
            files.put(path, fp);
            start = end + 1;
        }
        return files;
    }
}
