package sweeper.yarn;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Puts files on the cluster's file system once, in one JVM: what a sweep's launches share (Spark's jars archive, the
 * packed environment), each at a path named after its content, world-readable so that the NodeManagers keep what they
 * localize from it in their public cache (one copy per node for every application and user).
 *
 * <pre>
 * java -cp CONF_DIR:'target/lib/*' sweeper.yarn.Stage PATH...
 * </pre>
 *
 * <p>Prints {@code present PATH} or {@code missing PATH} for each PATH, then {@code ready}. Then it reads, from stdin,
 * one line per file to upload, {@code PATH<TAB>LOCAL_FILE}, until stdin closes, and uploads each: to a partial name
 * beside PATH, renamed to PATH when whole (a file at PATH is always complete; when another sweep renamed its copy
 * there first, that one is kept). PATH's directory and the files get mode 0755 and 0644 (parents made here too, up to
 * the first that exists). It prints {@code staged PATH} or {@code present PATH} for each, {@code failed PATH<TAB>why}
 * for one that could not be put, and exits 1 when one failed, 2 on bad usage, 0 otherwise.
 */
public final class Stage {
  private static final FsPermission DIRECTORY = new FsPermission((short) 0755);
  private static final FsPermission FILE = new FsPermission((short) 0644);

  private Stage() {}

  public static void main(String[] args) throws Exception {
    if (args.length == 0) {
      System.err.println("usage: Stage PATH... (then PATH<TAB>LOCAL_FILE lines on stdin)");
      System.exit(2);
    }
    Configuration conf = new Configuration();
    PrintStream out = new PrintStream(System.out, true, "UTF-8");
    for (String path : args) {
      Path target = new Path(path);
      out.println((target.getFileSystem(conf).exists(target) ? "present\t" : "missing\t") + path);
    }
    out.println("ready");
    List<String[]> uploads = new ArrayList<>();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      String[] fields = line.split("\t", 2);
      if (fields.length == 2 && Arrays.asList(args).contains(fields[0])) {
        uploads.add(fields);
      } else if (!line.isEmpty()) {
        System.err.println("Stage: not PATH<TAB>LOCAL_FILE of a PATH named: " + line);
        System.exit(2);
      }
    }
    int failed = 0;
    for (String[] upload : uploads) {
      try {
        out.println((put(conf, new Path(upload[0]), new Path(upload[1])) ? "staged\t" : "present\t") + upload[0]);
      } catch (IOException error) {
        failed++;
        out.println("failed\t" + upload[0] + "\t" + String.valueOf(error).replace('\n', ' '));
      }
    }
    System.exit(failed == 0 ? 0 : 1);
  }

  /** Upload {@code local} to {@code target} whole; false when a copy was there already (or got there first). */
  private static boolean put(Configuration conf, Path target, Path local) throws IOException {
    FileSystem fs = target.getFileSystem(conf);
    if (fs.exists(target)) {
      return false;
    }
    makeDirectories(fs, target.getParent());
    Path partial = new Path(target.getParent(), "." + target.getName() + ".partial-" + UUID.randomUUID());
    try {
      fs.copyFromLocalFile(false, true, local, partial);
      fs.setPermission(partial, FILE);
      if (fs.rename(partial, target)) {
        return true;
      }
      if (fs.exists(target)) { // another sweep's copy won the rename
        return false;
      }
      throw new IOException("could not rename " + partial + " to " + target);
    } finally {
      fs.delete(partial, false);
    }
  }

  /** {@code directory} and its missing parents, each 0755 (a directory made here), whatever the umask. */
  private static void makeDirectories(FileSystem fs, Path directory) throws IOException {
    List<Path> missing = new ArrayList<>();
    for (Path at = directory; at != null && !fs.exists(at); at = at.getParent()) {
      missing.add(0, at);
    }
    for (Path made : missing) {
      fs.mkdirs(made);
      fs.setPermission(made, DIRECTORY);
    }
  }
}
