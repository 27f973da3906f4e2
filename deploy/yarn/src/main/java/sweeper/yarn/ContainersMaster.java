package sweeper.yarn;

import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.yarn.api.ApplicationConstants;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.LocalResource;
import org.apache.hadoop.yarn.api.records.LocalResourceType;
import org.apache.hadoop.yarn.api.records.LocalResourceVisibility;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.URL;
import org.apache.hadoop.yarn.client.api.AMRMClient;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.client.api.NMClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * The ApplicationMaster of {@link Containers}: asks for N containers of one shape, runs the command in
 * each (the archive, if any, localized as a YARN archive under its link name: public when everyone may read it, as
 * Spark decides for its own files, so both engines share one copy per node), and ends when
 * every container has ended: succeeded when each command exited 0, failed (with the first failure's
 * diagnostics) otherwise. A container that cannot be started fails the application at once: the
 * others would wait for a worker that never comes. Killing the application (the sweeper's teardown)
 * ends it and its containers at once.
 */
public final class ContainersMaster {
  private ContainersMaster() {}

  public static void main(String[] args) throws Exception {
    Properties spec = Containers.spec();
    int wanted = Integer.parseInt(spec.getProperty("containers"));
    Resource shape = Resource.newInstance(
        Long.parseLong(spec.getProperty("memory-mib")), Integer.parseInt(spec.getProperty("vcores")));
    YarnConfiguration conf = new YarnConfiguration();
    String command = spec.getProperty("command")
        + " 1>" + ApplicationConstants.LOG_DIR_EXPANSION_VAR + "/stdout"
        + " 2>" + ApplicationConstants.LOG_DIR_EXPANSION_VAR + "/stderr";
    Map<String, LocalResource> resources = archive(conf, spec.getProperty("archive", ""));
    Map<String, String> env = new HashMap<>();
    for (String line : spec.getProperty("env", "").split("\n")) {
      int equals = line.indexOf('=');
      if (equals > 0) {
        env.put(line.substring(0, equals), line.substring(equals + 1));
      }
    }

    AMRMClient<ContainerRequest> rm = AMRMClient.createAMRMClient();
    rm.init(conf);
    rm.start();
    NMClient nm = NMClient.createNMClient();
    nm.init(conf);
    nm.start();
    rm.registerApplicationMaster(NetUtils.getHostname(), -1, "");
    Priority priority = Priority.newInstance(0);
    for (int i = 0; i < wanted; i++) {
      rm.addContainerRequest(new ContainerRequest(shape, null, null, priority));
    }
    Set<ContainerId> started = new HashSet<>();
    int asked = 0; // allocations handled: started or failed to start
    int ended = 0;
    int failed = 0;
    String firstFailure = null;
    while (ended < wanted) {
      AllocateResponse response = rm.allocate(ended / (float) wanted);
      if (response.getAMCommand() != null) { // the ResourceManager no longer knows this attempt
        System.err.println("ResourceManager: " + response.getAMCommand());
        System.exit(1);
      }
      for (Container container : response.getAllocatedContainers()) {
        if (asked >= wanted) {
          rm.releaseAssignedContainer(container.getId());
          continue;
        }
        rm.removeContainerRequest(new ContainerRequest(shape, null, null, priority));
        asked++;
        try {
          nm.startContainer(container, ContainerLaunchContext.newInstance(
              resources, env, Collections.singletonList(command), null, null, null));
          started.add(container.getId());
          System.out.println("started " + container.getId() + " on " + container.getNodeId());
        } catch (Exception error) {
          String reason = "could not start " + container.getId() + " on " + container.getNodeId() + ": " + error;
          System.err.println(reason);
          rm.releaseAssignedContainer(container.getId());
          rm.unregisterApplicationMaster(FinalApplicationStatus.FAILED, reason, "");
          System.exit(1);
        }
      }
      for (ContainerStatus status : response.getCompletedContainersStatuses()) {
        if (!started.remove(status.getContainerId())) {
          continue; // one released above
        }
        ended++;
        if (status.getExitStatus() != 0) {
          failed++;
          String reason = status.getContainerId() + " exited " + status.getExitStatus() + ": "
              + status.getDiagnostics();
          System.err.println(reason);
          firstFailure = firstFailure == null ? reason : firstFailure;
        }
      }
      Thread.sleep(500);
    }
    String message = failed + " of " + wanted + " containers failed" + (firstFailure == null ? "" : "; first: "
        + firstFailure.substring(0, Math.min(firstFailure.length(), 2000)));
    rm.unregisterApplicationMaster(
        failed == 0 ? FinalApplicationStatus.SUCCEEDED : FinalApplicationStatus.FAILED, message, "");
    nm.stop();
    rm.stop();
  }

  /**
   * {@code URI#LINK}: the file on the cluster's file system, unpacked by the NodeManager into ./LINK. PUBLIC when the
   * file is readable by others and every directory above it searchable by others (what Spark's
   * ClientDistributedCacheManager and MapReduce's decide, and what a NodeManager checks before it puts a resource in
   * its public cache): then every application of every user reuses the node's copy, Spark's launches included, which
   * name the same file; PRIVATE otherwise (one copy per user and node).
   */
  private static Map<String, LocalResource> archive(YarnConfiguration conf, String archive) throws Exception {
    Map<String, LocalResource> resources = new HashMap<>();
    if (archive.isEmpty()) {
      return resources;
    }
    int hash = archive.lastIndexOf('#');
    Path path = new Path(hash < 0 ? archive : archive.substring(0, hash));
    String link = hash < 0 ? path.getName() : archive.substring(hash + 1);
    FileSystem fs = path.getFileSystem(conf);
    FileStatus status = fs.getFileStatus(path);
    resources.put(link, LocalResource.newInstance(URL.fromPath(fs.makeQualified(path)), LocalResourceType.ARCHIVE,
        visibility(fs, status), status.getLen(), status.getModificationTime()));
    return resources;
  }

  static LocalResourceVisibility visibility(FileSystem fs, FileStatus file) throws Exception {
    if (!file.getPermission().getOtherAction().implies(FsAction.READ)) {
      return LocalResourceVisibility.PRIVATE;
    }
    for (Path directory = file.getPath().getParent(); directory != null; directory = directory.getParent()) {
      if (!fs.getFileStatus(directory).getPermission().getOtherAction().implies(FsAction.EXECUTE)) {
        return LocalResourceVisibility.PRIVATE;
      }
    }
    return LocalResourceVisibility.PUBLIC;
  }
}
