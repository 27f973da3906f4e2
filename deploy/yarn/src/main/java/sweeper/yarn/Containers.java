package sweeper.yarn;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.yarn.api.ApplicationConstants;
import org.apache.hadoop.yarn.api.ApplicationConstants.Environment;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.LocalResource;
import org.apache.hadoop.yarn.api.records.LocalResourceType;
import org.apache.hadoop.yarn.api.records.LocalResourceVisibility;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.URL;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * Runs one shell command in N YARN containers: the client that submits {@link ContainersMaster} and
 * follows its application until it ends (the sweeper's Dask workers and its preflight probe).
 *
 * <p>Unlike Hadoop's distributedshell, which uploads every file it ships into each application's
 * directory, the packed environment is named by its URI on the cluster's file system (staged there
 * once by the sweeper, world-readable) and localized as a public YARN archive: each NodeManager downloads
 * and unpacks it once, into its public cache, for every later application (Spark's, which name the same
 * file, included); as a private one, once per user, when others may not read it.
 *
 * <pre>
 * java -cp CONF_DIR:'target/lib/*' sweeper.yarn.Containers --name NAME --tags a,b --containers N
 *      --memory-mib M --vcores V --command 'SHELL' [--archive URI#LINK] [--env KEY=VALUE ...]
 *      [--queue Q] [--am-memory-mib 512]
 * </pre>
 *
 * <p>Prints the application id and its state changes on stdout, how it ended on stderr; exits 0 when the application
 * succeeded (every container's command exited 0), 1 when it failed or was killed, 2 on bad usage.
 */
public final class Containers {
  static final String SPEC = "SWEEPER_CONTAINERS_SPEC"; // the AM's environment: the spec, base64 of Properties
  private static final String JAR = "sweeper-yarn.jar";

  private Containers() {}

  public static void main(String[] args) throws Exception {
    Properties spec = new Properties();
    List<String> env = new ArrayList<>();
    String name = null;
    String tags = "";
    String queue = null;
    int amMemoryMib = 512;
    if (args.length % 2 != 0) {
      usage("every option takes one value");
    }
    for (int i = 0; i + 1 < args.length; i += 2) {
      String value = args[i + 1];
      switch (args[i]) {
        case "--name": name = value; break;
        case "--tags": tags = value; break;
        case "--queue": queue = value; break;
        case "--am-memory-mib": amMemoryMib = positive(args[i], value); break;
        case "--containers": case "--memory-mib": case "--vcores":
          spec.setProperty(args[i].substring(2), Integer.toString(positive(args[i], value)));
          break;
        case "--command": case "--archive":
          spec.setProperty(args[i].substring(2), value);
          break;
        case "--env": env.add(value); break;
        default:
          usage("unknown option " + args[i]);
      }
    }
    for (String required : new String[] {"containers", "memory-mib", "vcores", "command"}) {
      if (!spec.containsKey(required)) {
        usage("--" + required + " is required");
      }
    }
    if (name == null) {
      usage("--name is required");
    }
    spec.setProperty("env", String.join("\n", env));
    System.exit(run(name, tags, queue, amMemoryMib, spec));
  }

  private static int run(String name, String tags, String queue, int amMemoryMib, Properties spec)
      throws Exception {
    YarnConfiguration conf = new YarnConfiguration();
    YarnClient yarn = YarnClient.createYarnClient();
    yarn.init(conf);
    yarn.start();
    try {
      YarnClientApplication application = yarn.createApplication();
      ApplicationSubmissionContext context = application.getApplicationSubmissionContext();
      ApplicationId id = context.getApplicationId();
      FileSystem fs = FileSystem.get(conf);
      Path jar = new Path(fs.getHomeDirectory(), name + "/" + JAR); // removed by the sweeper's teardown
      fs.copyFromLocalFile(false, true, new Path(ownJar().getAbsolutePath()), jar);
      FileStatus status = fs.getFileStatus(jar);
      LocalResource amJar = LocalResource.newInstance(URL.fromPath(fs.makeQualified(jar)), LocalResourceType.FILE,
          LocalResourceVisibility.APPLICATION, status.getLen(), status.getModificationTime());

      Map<String, String> amEnv = new HashMap<>();
      StringBuilder classpath = new StringBuilder(Environment.PWD.$$()).append("/*");
      for (String entry : conf.getStrings(YarnConfiguration.YARN_APPLICATION_CLASSPATH,
          YarnConfiguration.DEFAULT_YARN_CROSS_PLATFORM_APPLICATION_CLASSPATH)) {
        classpath.append(ApplicationConstants.CLASS_PATH_SEPARATOR).append(entry.trim());
      }
      if (conf.getBoolean(YarnConfiguration.IS_MINI_YARN_CLUSTER, false)) { // its NodeManagers run on this machine
        classpath.append(ApplicationConstants.CLASS_PATH_SEPARATOR).append(System.getProperty("java.class.path"));
      }
      amEnv.put(Environment.CLASSPATH.name(), classpath.toString());
      ByteArrayOutputStream specBytes = new ByteArrayOutputStream();
      spec.store(specBytes, null);
      amEnv.put(SPEC, Base64.getEncoder().encodeToString(specBytes.toByteArray()));
      String command = Environment.JAVA_HOME.$$() + "/bin/java -Xmx" + Math.max(amMemoryMib / 2, 128) + "m "
          + ContainersMaster.class.getName()
          + " 1>" + ApplicationConstants.LOG_DIR_EXPANSION_VAR + "/AppMaster.stdout"
          + " 2>" + ApplicationConstants.LOG_DIR_EXPANSION_VAR + "/AppMaster.stderr";
      context.setAMContainerSpec(ContainerLaunchContext.newInstance(
          Collections.singletonMap(JAR, amJar), amEnv, Collections.singletonList(command), null, null, null));
      context.setApplicationName(name);
      context.setApplicationType("SWEEPER");
      context.setApplicationTags(new HashSet<>(Arrays.stream(tags.split(",")).filter(t -> !t.isEmpty()).collect(Collectors.toList())));
      context.setResource(Resource.newInstance(amMemoryMib, 1));
      context.setMaxAppAttempts(1);
      if (queue != null) {
        context.setQueue(queue);
      }
      yarn.submitApplication(context);
      System.out.println("submitted " + id);
      return follow(yarn, id);
    } finally {
      yarn.stop();
    }
  }

  /** Print the application's state changes until it ends; 0 when it succeeded. */
  private static int follow(YarnClient yarn, ApplicationId id) throws Exception {
    YarnApplicationState last = null;
    EnumSet<YarnApplicationState> ended =
        EnumSet.of(YarnApplicationState.FINISHED, YarnApplicationState.FAILED, YarnApplicationState.KILLED);
    while (true) {
      ApplicationReport report = yarn.getApplicationReport(id);
      YarnApplicationState state = report.getYarnApplicationState();
      if (state != last) {
        System.out.println(id + " " + state);
        System.out.flush();
        last = state;
      }
      if (ended.contains(state)) {
        FinalApplicationStatus result = report.getFinalApplicationStatus();
        System.err.println(id + " ended " + result + ": " + report.getDiagnostics());
        return result == FinalApplicationStatus.SUCCEEDED ? 0 : 1;
      }
      Thread.sleep(500);
    }
  }

  private static void usage(String problem) {
    System.err.println("Containers: " + problem + "\nusage: Containers --name NAME --containers N --memory-mib M "
        + "--vcores V --command SHELL [--archive URI#LINK] [--env KEY=VALUE ...] [--tags a,b] [--queue Q] "
        + "[--am-memory-mib M]");
    System.exit(2);
  }

  private static int positive(String option, String value) {
    try {
      int number = Integer.parseInt(value);
      if (number > 0) {
        return number;
      }
    } catch (NumberFormatException error) {
      // named below
    }
    usage(option + " must be a positive integer, got " + value);
    return 0;
  }

  private static File ownJar() throws IOException {
    try {
      return new File(Containers.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (java.net.URISyntaxException error) {
      throw new IOException(error);
    }
  }

  /** The spec from the ApplicationMaster's environment. */
  static Properties spec() throws IOException {
    Properties spec = new Properties();
    spec.load(new ByteArrayInputStream(Base64.getDecoder().decode(System.getenv(SPEC))));
    return spec;
  }
}
