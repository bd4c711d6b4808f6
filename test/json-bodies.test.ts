import t from 'tap';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { postForm, startService } from './helpers/service.js';
import { upload } from './helpers/upload.js';

/** Every POST /API operation takes a JSON object of its fields, with the rules and answers of a form. */

const VALIDATION = 'Your input contains several errors!';

t.test('JSON bodies', async (t) => {
  const service = await startService(t);
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
    service.app.inject({ method: 'POST', url, payload: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
  const detail = async (bucketId: number) => (await service.app.inject({ url: `/API/ViewBucketDetail?BucketId=${bucketId}` })).json();

  await t.test('AccessToken, then CreateBucket and EditBucket with real JSON types', async (t) => {
    const token = await postJson('/API/AccessToken', { AppId: owner.appId, AppSecret: owner.appSecret });
    t.equal(token.statusCode, 200);
    t.match(token.json(), { Code: 0, Message: 'Successfully get access token.', AccessToken: String, DeadTime: String });

    const name = uniqueBucketName('json');
    const created = await postJson('/API/CreateBucket', { BucketName: name, OpenToRead: true, OpenToUpload: false }, { authorization: `Bearer ${owner.token}` });
    t.equal(created.statusCode, 200);
    t.match(created.json(), { Code: 0, Message: 'Successfully created your bucket!', BucketId: Number });
    const bucketId = created.json().BucketId as number;
    t.match(await detail(bucketId), { BucketName: name, OpenToRead: true, OpenToUpload: false });

    // Names in any case, booleans as text in any case, numbers as text: as a form sends them.
    const renamed = uniqueBucketName('json-renamed');
    const edited = await postJson('/API/EditBucket', { accesstoken: owner.token, BUCKETID: String(bucketId), newBucketName: renamed, OpenToRead: 'False', opentoupload: true });
    t.same(edited.json(), { Message: 'Successfully edited your bucket!', Code: 0 });
    t.match(await detail(bucketId), { BucketName: renamed, OpenToRead: false, OpenToUpload: true });
  });

  await t.test('the same refusals as a form, every invalid input at once', async (t) => {
    const fields = { AccessToken: owner.token, BucketName: 'abc', OpenToRead: 'yes', OpenToUpload: 1 };
    const asJson = await postJson('/API/CreateBucket', fields);
    const asForm = await postForm(service.app, '/API/CreateBucket', fields);
    t.equal(asJson.statusCode, 200);
    t.same(asJson.json(), asForm.json(), 'the JSON answer is the form answer');
    t.same(asJson.json(), {
      Code: -10,
      Message: VALIDATION,
      Items: ['The field BucketName must be 5 to 25 characters long.', "The value 'yes' is not valid for OpenToRead.", "The value '1' is not valid for OpenToUpload."],
    });

    const values = await postJson('/API/DeleteBucket', { AccessToken: owner.token, BucketId: 1.5 });
    t.same(values.json(), { Code: -10, Message: VALIDATION, Items: ["The value '1.5' is not valid for BucketId."] });
    const objects = await postJson('/API/DeleteBucket', { AccessToken: { token: owner.token }, BucketId: null });
    t.same(objects.json(), { Code: -10, Message: VALIDATION, Items: ['The AccessToken field must be text.', 'The BucketId field must be text.'] });
    const empty = await postJson('/API/DeleteFile', '');
    t.same(empty.json(), { Code: -10, Message: VALIDATION, Items: ['The AccessToken field is required.', 'The FileKey field is required.'] }, 'an empty body has no fields');
  });

  await t.test('a field given more than once, in any case or twice with one spelling, is ambiguous', async (t) => {
    const ambiguous = { Code: -10, Message: VALIDATION, Items: ['The BucketId field was given more than once.'] };
    t.same((await postJson('/API/DeleteBucket', { AccessToken: owner.token, BucketId: 1, bucketid: 2 })).json(), ambiguous);
    t.same((await postJson('/API/DeleteBucket', `{"AccessToken":"${owner.token}","BucketId":1,"BucketId":1}`)).json(), ambiguous);
    t.same((await postJson('/API/DeleteBucket', { AccessToken: owner.token, BucketId: [1, 2] })).json(), ambiguous, 'a list, as a form field given twice');
    const twice = await postJson('/API/DeleteBucket', { AccessToken: 'another-token', BucketId: 1 }, { authorization: `Bearer ${owner.token}` });
    t.same(twice.json(), { Code: -10, Message: VALIDATION, Items: ['The AccessToken is given twice with different values.'] });
  });

  await t.test('the body is merged over the query string, and wins', async (t) => {
    const bucketId = await createBucket(service, owner.token);
    const other = await createBucket(service, owner.token);
    const deleted = await postJson(`/API/DeleteBucket?BucketId=${other}&AccessToken=${owner.token}`, { BucketId: bucketId });
    t.same(deleted.json(), { Message: 'Successfully deleted your bucket!', Code: 0 });
    t.same((await detail(bucketId)).Code, -1, 'the body’s bucket is gone');
    t.same((await detail(other)).Code, 0, 'the query’s is not');
  });

  await t.test('DeleteFile and DeleteApp', async (t) => {
    const bucketId = await createBucket(service, owner.token);
    const stored = await upload({ baseUrl, before: { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 }, fileName: 'json.txt', size: 10 });
    const fileKey = stored.body.FileKey as number;
    const refused = await postJson('/API/DeleteFile', { AccessToken: 'not-a-token', FileKey: fileKey });
    t.same(refused.json(), { Code: -1, Message: 'Invalid or expired AccessToken.' });
    t.same((await postJson('/API/DeleteFile', { AccessToken: owner.token, FileKey: fileKey })).json(), { Message: 'Successfully deleted your file!', Code: 0 });
    t.equal((await service.app.inject({ url: `/API/ViewOneFile?FileKey=${fileKey}` })).json().Code, -1, 'the file is gone');

    const doomed = await service.newApp();
    const wrong = await postJson('/API/DeleteApp', { AccessToken: doomed.token, AppId: owner.appId });
    t.same(wrong.json(), { Code: -1, Message: 'You can only delete your own app.' });
    t.same((await postJson('/API/DeleteApp', { AccessToken: doomed.token, AppId: doomed.appId })).json(), { Message: 'Successfully deleted that app and all files.', Code: 0 });
  });

  await t.test('bodies that are not one JSON object are unreadable', async (t) => {
    for (const body of ['{"AccessToken":', '[]', '"text"', '12', 'null']) {
      const response = await postJson('/API/DeleteFile', body);
      t.equal(response.statusCode, 400, body);
      t.same(response.json(), { Code: -10, Message: VALIDATION, Items: ['The JSON body must be one object of the operation’s fields.'] }, body);
    }
    const upload = await postJson(`/API/UploadFile?AccessToken=${owner.token}`, { BucketId: 1, AliveDays: 1, File: 'hello' });
    t.same(upload.json(), { Code: -10, Message: VALIDATION, Items: ['The request must be multipart/form-data with one file part.'] }, 'UploadFile still needs its file part');
  });
});
