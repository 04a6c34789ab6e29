# A script written for DeepFace, from the verify and represent examples of DeepFace's README
# (github.com/serengil/deepface, v0.0.100, MIT), run against facecompute by changing one line:
#
#     from deepface import DeepFace   ->   from facecompute import DeepFace
#
# and setting FACECOMPUTE_URL and FACECOMPUTE_API_KEY. DeepFace's README lists every model and detector
# it knows; the lists below keep those this service offers (GET /capabilities). The first two calls are
# DeepFace's README's as they stand: they leave model_name at DeepFace's default, VGG-Face, which the
# service does not serve, so they use the service's default model (Facenet), with one warning.
# The same file runs on DeepFace itself.
# It reads img1.jpg, img2.jpg (one person) and img.jpg from the current directory.
# test/clients.test.ts runs it in CI and checks that the import is the only facecompute line here.
from typing import List

from facecompute import DeepFace

# Face verification
result: dict = DeepFace.verify(img1_path="img1.jpg", img2_path="img2.jpg")
print("verify:", result["verified"], result["distance"], result["threshold"], result["model"])

# Facial representation
embedding_objs: List[dict] = DeepFace.represent(img_path="img.jpg")
print("represent:", len(embedding_objs), "face(s),", len(embedding_objs[0]["embedding"]), "dimensions")

# Face recognition models
models = ["Facenet", "Dlib"]

result = DeepFace.verify(img1_path="img1.jpg", img2_path="img2.jpg", model_name=models[0])
print("models[0]:", result["model"], result["verified"])

embeddings = DeepFace.represent(img_path="img.jpg", model_name=models[1])
print("models[1]:", len(embeddings[0]["embedding"]), "dimensions")

# Face detection and alignment
backends = ["opencv", "retinaface", "yunet"]
detector = backends[1]
align = True

obj = DeepFace.verify(img1_path="img1.jpg", img2_path="img2.jpg", model_name="Facenet", detector_backend=detector, align=align)
print("detector:", obj["detector_backend"], obj["verified"])

embedding_objs = DeepFace.represent(img_path="img.jpg", model_name="Facenet", detector_backend=detector, align=align)
print("detector represent:", embedding_objs[0]["facial_area"])

face_objs = DeepFace.extract_faces(img_path="img.jpg", detector_backend=detector, align=align)
print("extract_faces:", len(face_objs), "face(s),", face_objs[0]["face"].shape[2], "channels")

# Similarity
metrics = ["cosine", "euclidean", "euclidean_l2", "angular"]

result = DeepFace.verify(img1_path="img1.jpg", img2_path="img2.jpg", model_name="Facenet", distance_metric=metrics[1])
print("metric:", result["similarity_metric"], result["distance"], result["threshold"], result["verified"])
