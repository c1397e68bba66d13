package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;

import javax.xml.parsers.DocumentBuilderFactory;

import io.vivarium.common.features.Feature;

import org.apache.felix.scr.impl.inject.internal.Annotations;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * The configuration keys operators write reach the components that read them. A component reads
 * its configuration through an annotation type whose method names Declarative Services turns into
 * keys (112.8.2.1): {@code sandbox_uid()} reads {@code sandbox.uid}, {@code sandbox__uid()} reads
 * {@code sandbox_uid}. Our keys are written with underscores (features/*.json, the README, the
 * docs), so a method with a single underscore silently ignores what the operator set.
 *
 * <p>For every configuration type a Vivarium bundle in the distribution designates (its generated
 * metatype, whose attribute ids bnd derives by the same rule): each attribute id is an underscore
 * key, and the Felix SCR that the daemon runs hands a value set under that id to exactly one method
 * of the type; and every key that a feature's {@code configurations} ships for a PID is one of
 * those ids. The types are loaded from the jars in system/, as shipped.
 */
class ConfigurationKeysTest {

    /** A configuration type a bundle designates for a PID, with its attribute ids and types. */
    private record Designated(String pid, Path jar, String type, Map<String, String> attributes) {
    }

    private static Path dist;
    private static Map<String, Designated> byPid;

    @BeforeAll
    static void readMetatypes() throws Exception {
        String prop = System.getProperty("vivarium.dist");
        assertNotNull(prop, "surefire sets vivarium.dist to target/vivarium");
        dist = Path.of(prop);
        byPid = new TreeMap<>();
        try (Stream<Path> s = Files.walk(dist.resolve("system/io/vivarium"))) {
            for (Path jar : s.filter(p -> p.toString().endsWith(".jar")).toList()) {
                readMetatype(jar);
            }
        }
        assertTrue(byPid.keySet().containsAll(List.of("io.vivarium.core.internal.SandboxManager",
                "io.vivarium.backend.procbox", "io.vivarium.backend.qemu", "io.vivarium.storage.qcow2",
                "io.vivarium.storage.diffchain", "io.vivarium.backend.gvisor")),
                "the metatypes of core, procbox, qemu, storage-qcow2, storage-diffchain and gvisor were read: "
                        + byPid.keySet());
    }

    private static void readMetatype(Path jar) throws Exception {
        try (JarFile jf = new JarFile(jar.toFile())) {
            for (JarEntry e : Collections.list(jf.entries())) {
                if (e.getName().startsWith("OSGI-INF/metatype/") && e.getName().endsWith(".xml")) {
                    try (InputStream in = jf.getInputStream(e)) {
                        Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(in);
                        Element ocd = (Element) doc.getElementsByTagName("OCD").item(0);
                        Map<String, String> attributes = new TreeMap<>();
                        NodeList ads = ocd.getElementsByTagName("AD");
                        for (int i = 0; i < ads.getLength(); i++) {
                            Element ad = (Element) ads.item(i);
                            attributes.put(ad.getAttribute("id"), ad.getAttribute("type"));
                        }
                        String pid = ((Element) doc.getElementsByTagName("Designate").item(0)).getAttribute("pid");
                        byPid.put(pid, new Designated(pid, jar, ocd.getAttribute("id"), attributes));
                    }
                }
            }
        }
    }

    @Test
    void everyKeyIsWrittenWithUnderscoresAndReachesOneMethod() throws Exception {
        List<String> problems = new ArrayList<>();
        for (Designated d : byPid.values()) {
            try (URLClassLoader loader = new URLClassLoader(new URL[] { d.jar().toUri().toURL() },
                    ClassLoader.getPlatformClassLoader())) {
                Class<?> type = Class.forName(d.type(), false, loader);
                for (Map.Entry<String, String> a : d.attributes().entrySet()) {
                    String key = a.getKey();
                    if (key.contains(".")) {
                        problems.add(d.pid() + ": " + key + " is not an underscore key (write each _ of the method "
                                + "name of " + d.type() + " as __)");
                        continue;
                    }
                    Object value = distinctValue(a.getValue(), key);
                    List<String> reading = methodsReturning(type, Map.of(key, value), value);
                    if (reading.size() != 1) {
                        problems.add(d.pid() + ": a value set as " + key + " is read by " + reading + " of "
                                + d.type() + ", not by exactly one method");
                    }
                }
            }
        }
        assertTrue(problems.isEmpty(), String.join("\n", problems));
    }

    @Test
    void everyKeyAFeatureShipsIsReadByItsComponent() throws IOException {
        List<String> problems = new ArrayList<>();
        int keys = 0;
        try (Stream<Path> s = Files.list(dist.resolve("features"))) {
            for (Path file : s.filter(p -> p.toString().endsWith(".json")).sorted().toList()) {
                Feature f = Feature.read(file);
                for (Map.Entry<String, Map<String, Object>> c : f.configurations().entrySet()) {
                    Designated d = byPid.get(c.getKey());
                    if (d == null) {
                        problems.add(f.name() + ": no Vivarium bundle designates a configuration for PID " + c.getKey());
                        continue;
                    }
                    for (String key : c.getValue().keySet()) {
                        keys++;
                        if (!d.attributes().containsKey(key)) {
                            problems.add(f.name() + ": " + c.getKey() + " has no key " + key + " (its keys: "
                                    + d.attributes().keySet() + ")");
                        }
                    }
                }
            }
        }
        assertTrue(problems.isEmpty(), String.join("\n", problems));
        assertTrue(keys >= 18, "the procbox, qemu and gvisor features' keys were checked (" + keys + ")");
    }

    /** A value of the attribute's metatype type that no default of ours has. */
    private static Object distinctValue(String adType, String key) {
        return switch (adType) {
            case "Integer" -> 918_273;
            case "Long" -> 918_273_645L;
            case "String" -> "set as " + key;
            default -> throw new AssertionError(key + " has metatype type " + adType + ": teach this test a value of it");
        };
    }

    /** The methods of {@code type} that return {@code value} when SCR builds it from {@code properties}. */
    private static List<String> methodsReturning(Class<?> type, Map<String, Object> properties, Object value)
            throws ReflectiveOperationException {
        Object config = Annotations.toObject(type, properties, null, false);
        List<String> methods = new ArrayList<>();
        for (Method m : type.getDeclaredMethods()) {
            if (m.getParameterCount() == 0 && value.equals(m.invoke(config))) {
                methods.add(m.getName() + "()");
            }
        }
        return methods;
    }
}
