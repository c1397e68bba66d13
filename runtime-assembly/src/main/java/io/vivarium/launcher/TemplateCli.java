package io.vivarium.launcher;

import static io.vivarium.launcher.CliWords.arg;
import static io.vivarium.launcher.CliWords.args;
import static io.vivarium.launcher.CliWords.intOption;
import static io.vivarium.launcher.CliWords.option;
import static io.vivarium.launcher.CliWords.verb;
import static io.vivarium.launcher.SandboxCli.JSON;

import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.vivarium.api.TemplateInfo;
import io.vivarium.api.TemplateRequest;
import io.vivarium.client.VivariumClient;
import io.vivarium.launcher.CliWords.Usage;

/**
 * {@code vivarium template ...} (docs/templates.md): an operator makes a template from an OCI image
 * and sees its build to the end on a progress bar (the MiB of its layers pulled); anyone lists them.
 */
final class TemplateCli {
    /** How often a build's progress is asked for while the CLI waits for it. */
    private static final Duration POLL = Duration.ofMillis(250);

    private final VivariumClient vivarium;
    private final PrintStream out;
    private final PrintStream err;
    private final boolean json;
    private final boolean terminal;

    TemplateCli(VivariumClient vivarium, PrintStream out, PrintStream err, boolean json, boolean terminal) {
        this.vivarium = vivarium;
        this.out = out;
        this.err = err;
        this.json = json;
        this.terminal = terminal;
    }

    int run(List<String> w) throws Usage, IOException {
        String verb = verb(w);
        return switch (verb) {
            case "create" -> create(w);
            case "ls" -> list();
            case "info" -> print(vivarium.templates().get(arg(w, 1, "NAME")));
            case "rm" -> {
                for (String name : args(w, 1, "NAME")) {
                    vivarium.templates().delete(name);
                    if (!json) {
                        out.println(name + " deleted");
                    }
                }
                yield 0;
            }
            default -> throw new Usage("unknown template command " + verb);
        };
    }

    private int create(List<String> w) throws Usage, IOException {
        String image = option(w, "--image");
        if (image == null) {
            throw new Usage("template create needs --image REF (docker://host/name:tag, oci:/layout:tag or docker-archive:/image.tar)");
        }
        String backend = option(w, "--backend");
        String user = option(w, "--user");
        String workdir = option(w, "--workdir");
        Integer memory = intOption(w, "--memory");
        String clientMaySet = option(w, "--client-may-set");
        String setup = option(w, "--setup");
        boolean noWait = w.remove("--no-wait");
        Map<String, String> env = new LinkedHashMap<>();
        for (String e; (e = option(w, "--env")) != null;) {
            int eq = e.indexOf('=');
            if (eq <= 0) {
                throw new Usage("--env is NAME=VALUE, got " + e);
            }
            env.put(e.substring(0, eq), e.substring(eq + 1));
        }
        String name = arg(w, 1, "NAME");
        TemplateInfo made = vivarium.templates().create(new TemplateRequest(name, backend, image, null, memory, null, null, env,
                workdir, user, null, null, null, clientMaySet == null ? null : Arrays.asList(clientMaySet.split(",")),
                setup == null ? null : List.of("sh", "-c", setup)));
        if (!noWait) {
            made = awaitBuild(made);
        }
        print(made);
        return made.state().equals(TemplateInfo.FAILED) ? 1 : 0;
    }

    /** Follows the build on a progress bar until it is ready or failed (which it says why, on stderr). */
    private TemplateInfo awaitBuild(TemplateInfo made) throws IOException {
        TemplateInfo now = made;
        try (ProgressBar bar = new ProgressBar(err, terminal)) {
            while (now.state().equals(TemplateInfo.BUILDING)) {
                TemplateInfo.Build b = now.build();
                bar.step("MiB pulled", (int) (b.bytesDone() >> 20), (int) (b.bytes() >> 20));
                try {
                    Thread.sleep(POLL.toMillis());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while template " + made.name() + " was built (it goes on)");
                }
                now = vivarium.templates().get(made.name());
            }
        }
        if (now.state().equals(TemplateInfo.FAILED)) {
            err.println("vivarium: template " + now.name() + " failed to build: " + now.build().error());
        }
        return now;
    }

    private int list() throws IOException {
        List<TemplateInfo> templates = vivarium.templates().list();
        if (json) {
            out.println(JSON.writeValueAsString(templates));
            return 0;
        }
        out.printf("%-24s %-10s %-10s %-20s %s%n", "NAME", "BACKEND", "STATE", "CREATED", "IMAGE");
        templates.forEach(t -> out.printf("%-24s %-10s %-10s %-20s %s%n", t.name(),
                t.request().backend() == null ? "(default)" : t.request().backend(), t.state(),
                Instant.ofEpochSecond(t.createdAtUnix()), t.request().image()));
        return 0;
    }

    private int print(TemplateInfo t) throws IOException {
        if (json) {
            out.println(JSON.writeValueAsString(t));
        } else {
            List<String> line = new ArrayList<>(List.of(t.name(), t.state()));
            if (t.image() != null) {
                line.add(t.image().digest());
            }
            out.println(String.join("  ", line));
        }
        return 0;
    }
}
